package proccpu

import (
	"os"
	"testing"
)

func TestRead(t *testing.T) {
	before, err := Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if before.PPID != os.Getppid() {
		t.Errorf("PPID = %d, want %d", before.PPID, os.Getppid())
	}
	// Spin until the process's own time moves by a tick or more.
	for {
		after, err := Read(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if after.Self > before.Self {
			break
		}
	}
	busy, err := MachineBusy()
	if err != nil || busy <= 0 {
		t.Errorf("MachineBusy() = %d, %v", busy, err)
	}
}
