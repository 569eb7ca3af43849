package recording

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/hapticd/hapticd/protocol/mcap"
)

// ExportJSONL writes every message of f as one JSON object a line: topic,
// log time, sequence and the message itself.
func ExportJSONL(f *mcap.File, out io.Writer) error {
	w := bufio.NewWriter(out)
	for _, m := range f.Messages {
		line, err := json.Marshal(struct {
			Topic     string          `json:"topic"`
			LogTimeNs uint64          `json:"log_time_ns"`
			Sequence  uint32          `json:"sequence"`
			Data      json.RawMessage `json:"data"`
		}{f.Channels[m.ChannelID].Topic, m.LogTime, m.Sequence, m.Data})
		if err != nil {
			return fmt.Errorf("recording: export message %d of %s: %w", m.Sequence, f.Channels[m.ChannelID].Topic, err)
		}
		if _, err := w.Write(append(line, '\n')); err != nil {
			return err
		}
	}
	return w.Flush()
}

// csvHeader names ExportCSV's columns; a grip's orientation, buttons, hall
// and battery come last.
const csvHeader = "topic,log_time_ns,device,type,tick,mode,owner,px,py,pz,vx,vy,vz,fx,fy,fz,target_x,target_y,target_z,qw,qx,qy,qz,buttons,hall,battery"

// ExportCSV writes the device states of f, one row each.
func ExportCSV(f *mcap.File, out io.Writer) error {
	w := bufio.NewWriter(out)
	cw := csv.NewWriter(w)
	_ = cw.Write(strings.Split(csvHeader, ","))
	for _, m := range f.Messages {
		c := f.Channels[m.ChannelID]
		if c.Metadata["kind"] != KindState {
			continue
		}
		var st State
		if err := json.Unmarshal(m.Data, &st); err != nil {
			return fmt.Errorf("recording: export %s: %w", c.Topic, err)
		}
		_ = cw.Write(csvRow(c.Topic, m.LogTime, &st))
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return err
	}
	return w.Flush()
}

func csvRow(topic string, logTime uint64, st *State) []string {
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	row := []string{topic, strconv.FormatUint(logTime, 10), st.Device, st.Type, strconv.FormatUint(st.Tick, 10),
		strconv.Itoa(st.Mode), strconv.FormatUint(st.Owner, 10)}
	for _, v := range [][]float64{st.Position[:], st.Velocity[:], st.Force[:], st.Target[:], st.Orientation[:]} {
		for _, x := range v {
			row = append(row, g(x))
		}
	}
	return append(row, strconv.Itoa(int(st.Buttons)), g(st.Hall), g(st.Battery))
}
