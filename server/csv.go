package server

import (
	"github.com/sensorreadings/readings/datetime"

	"slices"
	"strconv"
	"strings"

	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/sensing"
	"github.com/sensorreadings/readings/store"
)

// keyNames names a sensor's inputs and outputs by their blueprint keys, for
// keys=names; nil names them by id, the default. An id the sensor's
// instance does not know (a sensor without a blueprint, an input removed
// from it) keeps its id.
type keyNames map[int64]keyName

type keyName struct{ key, unit string }

// newKeyNames is the naming keys asks for of sensor's values; each read
// operation has its own generated type of the keys parameter.
func newKeyNames[K ~string](sensor store.Sensor, keys *K) keyNames {
	return sensorNames(sensor, byName(keys))
}

// byName tells whether keys asks for values named by key.
func byName[K ~string](keys *K) bool {
	return keys != nil && string(*keys) == string(gen.KeysNames)
}

// sensorNames is the naming of sensor's values by key, when byName, else
// by id (nil).
func sensorNames(sensor store.Sensor, byName bool) keyNames {
	if !byName || sensor.Instance == nil {
		return nil
	}
	names := keyNames{}
	for _, in := range sensor.Instance.Inputs {
		names[in.ID] = keyName{in.Key, in.Unit}
	}
	for _, out := range sensor.Instance.Outputs {
		names[out.ID] = keyName{out.Key, out.Unit}
	}
	return names
}

// appendKey appends the name of id as a JSON object's key, quoted. Keys
// are identifiers ([A-Za-z_][A-Za-z0-9_]*), so nothing needs escaping.
func (n keyNames) appendKey(b []byte, id int64) []byte {
	b = append(b, '"')
	if name, ok := n[id]; ok {
		b = append(b, name.key...)
	} else {
		b = strconv.AppendInt(b, id, 10)
	}
	return append(b, '"')
}

// appendColumn appends the CSV header cell of id: the id, or the key and
// its unit, as in "pressure (kPa)", quoted when the unit needs it.
func (n keyNames) appendColumn(b []byte, id int64) []byte {
	name, ok := n[id]
	if !ok {
		return strconv.AppendInt(b, id, 10)
	}
	cell := name.key
	if name.unit != "" {
		cell += " (" + name.unit + ")"
	}
	if strings.ContainsAny(cell, `,"`) {
		cell = `"` + strings.ReplaceAll(cell, `"`, `""`) + `"`
	}
	return append(b, cell...)
}

// csvColumns writes readings as CSV rows: datetime, then one column per
// input id, then one per output id; a cell is empty where the reading has
// no value. Every cell is a number or a datetime, so nothing needs quoting;
// only a header cell with a unit may.
type csvColumns struct {
	inputIDs []int64          // ascending
	outputs  *sensing.Outputs // nil without outputs
	names    keyNames
}

func (c *csvColumns) appendHeader(b []byte) []byte {
	b = append(b, "datetime"...)
	for _, id := range c.inputIDs {
		b = append(b, ',')
		b = c.names.appendColumn(b, id)
	}
	if c.outputs != nil {
		for _, id := range c.outputs.IDs() {
			b = append(b, ',')
			b = c.names.appendColumn(b, id)
		}
	}
	return append(b, '\n')
}

func (c *csvColumns) appendRow(b []byte, r *store.Reading) []byte {
	b = datetime.Append(b, r.Time)
	i := 0 // r.InputIDs is ascending, like the columns
	for _, id := range c.inputIDs {
		b = append(b, ',')
		for i < len(r.InputIDs) && r.InputIDs[i] < id {
			i++
		}
		if i < len(r.InputIDs) && r.InputIDs[i] == id {
			b = appendNumber(b, r.Values[i])
		}
	}
	if c.outputs != nil {
		c.outputs.Compute(r)
		for k := range c.outputs.IDs() {
			b = append(b, ',')
			if v, ok := c.outputs.Value(k); ok {
				b = appendNumber(b, v)
			}
		}
	}
	return append(b, '\n')
}

// inputIDsOf is every input id the readings use, ascending.
func inputIDsOf(readings []store.Reading) []int64 {
	var ids []int64
	for _, r := range readings {
		ids = append(ids, r.InputIDs...)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}
