package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/event"
)

// readmeSections are the README parts generated from the one deprecation
// table and the one event table; a test fails when the README drifts, and
// `hapticd docs` prints what it should say.
func readmeSections() string {
	return protocol.DeprecationMarkdown() + "\n" + eventsMarkdown()
}

func eventsMarkdown() string { return event.MarkdownTable() }

func runDocs(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("hapticd docs", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	_, err := io.WriteString(out, readmeSections())
	return err
}

// runDeprecations prints the migration report of a running service: each
// deprecated route or command used since it started, by whom, and what to
// use instead.
func runDeprecations(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("hapticd deprecations", flag.ContinueOnError)
	target := fs.String("target", "http://127.0.0.1:10001", "base URL of the running hapticd")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(strings.TrimSuffix(*target, "/") + "/deprecations")
	if err != nil {
		return fmt.Errorf("reach hapticd at %s (is it running? --target sets the address): %w", *target, err)
	}
	defer resp.Body.Close()
	var env struct {
		OK    bool            `json:"ok"`
		Data  json.RawMessage `json:"data"`
		Error string          `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		return fmt.Errorf("read the report: %w", err)
	}
	if !env.OK {
		return errors.New(env.Error)
	}
	if *asJSON {
		var pretty any
		_ = json.Unmarshal(env.Data, &pretty)
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(pretty)
	}
	return printUsage(out, env.Data)
}
