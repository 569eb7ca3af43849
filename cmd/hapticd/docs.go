package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/hapticd/hapticd/actors/activity"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/event"
)

// readmeSections are the parts of the docs generated from the one
// deprecation table (docs/clients.md) and the one event table
// (docs/events.md); a test fails when a page drifts, and `hapticd docs`
// prints what it should say.
func readmeSections() string {
	return protocol.DeprecationMarkdown() + "\n" + eventsMarkdown()
}

func eventsMarkdown() string { return event.MarkdownTable() }

func runDocs(args []string, out io.Writer) error {
	fs := newFlagSet("docs")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	_, err := io.WriteString(out, readmeSections())
	return err
}

// runDeprecations prints the migration report of a running service: each
// deprecated route or command used since it started, by whom, and what to
// use instead.
func runDeprecations(args []string, out io.Writer) error {
	fs := newFlagSet("deprecations")
	target := fs.String("target", "http://127.0.0.1:10001", "base URL of the running hapticd")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := parseNoArgs(fs, args); err != nil {
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

// printUsage renders the migration report as text.
func printUsage(out io.Writer, data json.RawMessage) error {
	var u activity.Usage
	if err := json.Unmarshal(data, &u); err != nil {
		return fmt.Errorf("read the report: %w", err)
	}
	fmt.Fprintf(out, "Deprecated use since %s (support ends in 4.0)\n\n", u.Since.Local().Format(time.RFC3339))
	section := func(title string, uses []activity.DeprecatedUse) {
		fmt.Fprintf(out, "%s:\n", title)
		if len(uses) == 0 {
			fmt.Fprintln(out, "  none")
		}
		for _, d := range uses {
			fmt.Fprintf(out, "  %-60s %6d×  use %s\n", d.Name, d.Count, d.Replacement)
			fmt.Fprintf(out, "      by remote: %s  by profile: %s", tally(d.ByRemote), tally(d.ByProfile))
			if len(d.ByAPIFormat) > 0 { // commands: by the sending session's API format
				fmt.Fprintf(out, "  by API format: %s", tally(d.ByAPIFormat))
			}
			fmt.Fprintln(out)
		}
		fmt.Fprintln(out)
	}
	section("Deprecated HTTP routes", u.Routes)
	section("Deprecated session commands", u.Commands)
	fmt.Fprintf(out, "3.0 API sessions: %d (open now: %d)  by remote: %s  by profile: %s\n",
		u.Legacy.Sessions.Count, u.Legacy.OpenSessions, tally(u.Legacy.Sessions.ByRemote), tally(u.Legacy.Sessions.ByProfile))
	for _, r := range u.Legacy.Routes {
		fmt.Fprintf(out, "  %-60s %6d×  by remote: %s\n", r.Route, r.Count, tally(r.ByRemote))
	}
	return nil
}

func tally(m map[string]uint64) string {
	if len(m) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
