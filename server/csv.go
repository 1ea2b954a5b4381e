package server

import (
	"slices"
	"strconv"

	"github.com/sensorreadings/readings/store"
)

// csvColumns writes readings as CSV rows: datetime, then one column per
// input id, then one per output id; a cell is empty where the reading has
// no value. Every cell is a number or a datetime, so nothing needs quoting.
type csvColumns struct {
	inputIDs []int64        // ascending
	outputs  *outputsWriter // nil without outputs
}

func (c *csvColumns) appendHeader(b []byte) []byte {
	b = append(b, "datetime"...)
	for _, id := range c.inputIDs {
		b = append(b, ',')
		b = strconv.AppendInt(b, id, 10)
	}
	if c.outputs != nil {
		for _, id := range c.outputs.outputIDs {
			b = append(b, ',')
			b = strconv.AppendInt(b, id, 10)
		}
	}
	return append(b, '\n')
}

func (c *csvColumns) appendRow(b []byte, r *store.Reading) []byte {
	b = appendDatetime(b, r.Time)
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
		c.outputs.compute(r)
		for k := range c.outputs.outputIDs {
			b = append(b, ',')
			if v, ok := c.outputs.value(k); ok {
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

// instanceInputIDs is the input ids of a sensor's instance, ascending, or
// nil without one.
func instanceInputIDs(sensor store.Sensor) []int64 {
	if sensor.Instance == nil {
		return nil
	}
	ids := make([]int64, len(sensor.Instance.Inputs))
	for i, in := range sensor.Instance.Inputs {
		ids[i] = in.ID
	}
	slices.Sort(ids)
	return ids
}
