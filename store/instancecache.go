package store

import (
	"bytes"
	"encoding/json"
	"sync"
)

// instanceCache keeps, by sensor, the instance a page's lookup
// (ReadPage) last decoded and the JSON it decoded it from, so that a
// page of a sensor whose instance did not change is not charged its
// decoding again: some 40 µs of a page with outputs, for an instance of
// ten inputs and five outputs. It is keyed on the JSON itself, compared
// byte for byte, not on the instance's version, which a write could
// give to another content: whatever the JSON, the instance is what
// decoding it gives.
type instanceCache struct {
	mu   sync.Mutex
	kept map[int64]keptInstance
}

// keptInstance is an instance and the JSON it was decoded from.
type keptInstance struct {
	json []byte
	inst *Instance
}

// maxKeptInstances bounds the instances kept; past it they start over.
// A few kB each.
const maxKeptInstances = 1024

// decode returns the instance src holds, the JSON of sensor sensorID's
// instance column (nil: NULL, and no instance), in a copy of its own:
// the caller may change it. src need not outlive the call.
func (c *instanceCache) decode(sensorID int64, src []byte) (*Instance, error) {
	if src == nil {
		return nil, nil
	}
	c.mu.Lock()
	k, ok := c.kept[sensorID]
	c.mu.Unlock()
	if ok && bytes.Equal(k.json, src) {
		inst := k.inst.Clone()
		return &inst, nil
	}
	inst := new(Instance)
	if err := json.Unmarshal(src, inst); err != nil {
		return nil, err
	}
	kept := inst.Clone()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kept == nil || len(c.kept) >= maxKeptInstances {
		c.kept = make(map[int64]keptInstance)
	}
	c.kept[sensorID] = keptInstance{json: bytes.Clone(src), inst: &kept}
	return inst, nil
}
