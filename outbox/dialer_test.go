package outbox

import (
	"strings"
	"testing"
	"time"
)

// webhookTargets are addresses a webhook's name may resolve to, with
// whether the dialer lets a delivery connect to them. One per
// special-purpose range, the ones the hand-kept list missed included.
var webhookTargets = []struct {
	address string
	refused bool
}{
	{"127.0.0.1:80", true},            // loopback
	{"10.1.2.3:443", true},            // private
	{"172.16.0.1:443", true},          // private
	{"192.168.1.1:443", true},         // private
	{"169.254.169.254:80", true},      // link-local, a cloud metadata address
	{"0.0.0.0:80", true},              // this network
	{"224.0.0.1:80", true},            // multicast
	{"100.64.0.1:443", true},          // shared address space (carrier-grade NAT)
	{"100.100.100.200:80", true},      // a cloud metadata address in it
	{"198.18.0.1:443", true},          // benchmarking
	{"198.19.255.254:443", true},      // benchmarking, the /15's end
	{"192.0.0.8:443", true},           // IETF protocol assignments
	{"192.0.2.1:443", true},           // documentation
	{"240.0.0.1:443", true},           // reserved
	{"255.255.255.255:80", true},      // broadcast
	{"[::1]:80", true},                // loopback
	{"[::]:80", true},                 // unspecified
	{"[fe80::1]:443", true},           // link-local
	{"[fc00::1]:443", true},           // unique local
	{"[ff02::1]:443", true},           // multicast
	{"[::ffff:127.0.0.1]:80", true},   // IPv4-mapped loopback
	{"[64:ff9b::7f00:1]:80", true},    // NAT64 of 127.0.0.1
	{"[64:ff9b::a9fe:a9fe]:80", true}, // NAT64 of 169.254.169.254
	{"[2002:7f00:1::1]:80", true},     // 6to4 of 127.0.0.1
	{"[2001:db8::1]:443", true},       // documentation
	{"[2001::1]:443", true},           // Teredo, in IETF protocol assignments
	{"93.184.215.14:443", false},      // a public address
	{"1.1.1.1:8443", false},           // any port of a public address
	{"[2606:4700:4700::1111]:443", false},
}

// TestDialerRefusesSpecialAddresses asks the webhook dialer's guard
// about each target, as the dialer does after resolving a name and before
// connecting: nothing is sent anywhere.
func TestDialerRefusesSpecialAddresses(t *testing.T) {
	t.Parallel()
	control := newDialer(time.Second, false).Control
	if control == nil {
		t.Fatal("the webhook dialer has no guard")
	}
	for _, tt := range webhookTargets {
		network := "tcp4"
		if strings.HasPrefix(tt.address, "[") {
			network = "tcp6"
		}
		err := control(network, tt.address, nil)
		if got := err != nil; got != tt.refused {
			t.Errorf("Control(%q, %q) = %v, want refused %v", network, tt.address, err, tt.refused)
		}
	}
}

// TestDialerAllowPrivate: -webhook-allow-private lifts the guard, so
// that tests and receivers on premises are reached.
func TestDialerAllowPrivate(t *testing.T) {
	t.Parallel()
	if newDialer(time.Second, true).Control != nil {
		t.Error("with private targets allowed, the webhook dialer still has a guard")
	}
}
