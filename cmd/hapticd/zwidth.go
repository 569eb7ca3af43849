package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/hapticd/hapticd/actors/loop/zwidth"
)

// runZwidth implements `hapticd zwidth`: the virtual-time mode of
// `hapticbench zwidth`. It simulates the arm, the client's sample-and-hold
// and delay, the loop's wall and the passivity controller in simulated
// time (actors/loop/zwidth), finds each row's largest stable wall
// stiffness and prints one JSON report (zwidth.Report) for hapticbench to
// tabulate beside the theoretical bounds. It lives in the service binary
// because the load generator may not import the loop or the simulated arm.
func runZwidth(args []string) error { return zwidthVirtual(args, os.Stdout) }

// renderersInUse names the wall and passivity implementations zwidth runs
// (zwidth.Config's defaults: the loop's own).
const renderersInUse = "the loop's: actors/loop/effect Wall, actors/loop/passivity Controller"

func zwidthVirtual(args []string, w io.Writer) error {
	fs := newFlagSet("zwidth")
	c := zwidth.DefaultConfig()
	delayFrames := fs.Float64("delay-frames", 1, "client delay in frames of its own rate: from reading a state to its force reaching the loop (0..4)")
	fs.Float64Var(&c.PushN, "push", c.PushN, "the user's steady push into the wall, N")
	clientHz := fs.String("client-hz", "60,90,200", "client frame rates of rows A and C, Hz, comma-separated")
	effectHz := fs.String("effect-hz", "1000,4000", "loop rates of rows B, Hz, comma-separated")
	loopHz := fs.Float64("loop-hz", 1000, "the loop's rate under rows A and C, Hz")
	paths := fs.String("paths", "ABC", "which paths to run: any of A (client), B (effect), C (client with passivity)")
	hand := fs.String("hand", "both", "rows without the hand model (off), with it (on), or both")
	if err := parseNoArgs(fs, args); err != nil {
		return fmt.Errorf("zwidth: %w", err)
	}
	rows, err := zwidthRows(*paths, *hand, *clientHz, *effectHz, *loopHz, *delayFrames)
	if err != nil {
		return fmt.Errorf("zwidth: %w", err)
	}
	res, err := zwidth.Run(c, rows)
	if err != nil {
		return fmt.Errorf("zwidth: %w", err)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(zwidth.NewReport(c, renderersInUse, res))
}

// zwidthRows builds the rows the flags ask for, in the table's order.
func zwidthRows(paths, hand, clientHz, effectHz string, loopHz, delayFrames float64) ([]zwidth.Row, error) {
	var hands []bool
	switch hand {
	case "off":
		hands = []bool{false}
	case "on":
		hands = []bool{true}
	case "both":
		hands = []bool{false, true}
	default:
		return nil, fmt.Errorf("--hand %q: use off, on or both", hand)
	}
	if paths == "" || strings.Trim(strings.ToUpper(paths), "ABC") != "" {
		return nil, fmt.Errorf("--paths %q: use letters among A, B and C", paths)
	}
	if !(delayFrames >= 0 && delayFrames <= 4) {
		return nil, fmt.Errorf("--delay-frames %v: use 0..4", delayFrames)
	}
	clients, err := ratesHz("--client-hz", clientHz)
	if err != nil {
		return nil, err
	}
	effects, err := ratesHz("--effect-hz", effectHz)
	if err != nil {
		return nil, err
	}
	has := func(p byte) bool { return strings.ContainsRune(strings.ToUpper(paths), rune(p)) }
	var rows []zwidth.Row
	for _, h := range hands {
		if has('A') {
			for _, hz := range clients {
				rows = append(rows, zwidth.Row{Path: zwidth.PathClient, RateHz: hz, LoopHz: loopHz, DelayS: delayFrames / hz, Hand: h})
			}
		}
		if has('B') {
			for _, hz := range effects {
				rows = append(rows, zwidth.Row{Path: zwidth.PathEffect, RateHz: hz, LoopHz: hz, Hand: h})
			}
		}
		if has('C') {
			for _, hz := range clients {
				rows = append(rows, zwidth.Row{Path: zwidth.PathClientPassivity, RateHz: hz, LoopHz: loopHz, DelayS: delayFrames / hz, Hand: h})
			}
		}
	}
	return rows, nil
}

// ratesHz parses a comma-separated list of positive rates.
func ratesHz(flagName, s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(v > 0) {
			return nil, fmt.Errorf("%s %q: want positive rates in Hz, comma-separated", flagName, s)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, errors.New(flagName + ": no rates")
	}
	return out, nil
}
