package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"

	"github.com/hapticd/hapticd/transport"
)

// command is one subcommand of hapticd.
type command struct {
	name    string
	summary string // one line, for `hapticd help`
	run     func(args []string) error
}

// commandTable is every subcommand, in the order `hapticd help` lists
// them. A new subcommand (a per-OS one too) is one more row here.
func commandTable() []command {
	return []command{
		{"serve", "run the service (the default: `hapticd [flags]` is `hapticd serve [flags]`)", serve},
		{"deprecations", "print the migration report of a running service", func(a []string) error { return runDeprecations(a, os.Stdout) }},
		{"docs", "print the deprecation and event tables of docs/clients.md and docs/events.md, generated from the protocol tables", func(a []string) error { return runDocs(a, os.Stdout) }},
		{"baseline-arms", "step simulated arms with no service around them (a bench baseline)", runBaselineArms},
		{"zwidth", "find the stiffest stable wall per path and rate in virtual time, as JSON (hapticbench zwidth tabulates it)", runZwidth},
		{"baseline-device", "drive an arm from a bare paced loop, no service (a bench baseline)", func(a []string) error { return runBaselineDevice(a, os.Stdin) }},
		{"device-standin", "an emulated arm on a pseudo-terminal that times the host's loop from the device side", func(a []string) error { return runDeviceStandin(a, os.Stdin, os.Stdout) }},
		{"replay", "serve a recording's arms and grips as virtual devices (FILE, --speed), or --drive a service with its sessions and compare the frames", runReplay},
		{"export", "write a recording as jsonl (every message) or csv (device states): hapticd export FILE --format csv|jsonl", func(a []string) error { return runExport(a, os.Stdout) }},
		{"service", "install, start, stop or uninstall the Windows service (elsewhere: systemd or launchd)", func(a []string) error { return runService(a, os.Stdout) }},
		{"version", "print hapticd's version and VCS revision", func(a []string) error { return runVersion(a, os.Stdout) }},
		{"help", "list the subcommands, or explain one: hapticd help SUBCOMMAND", func(a []string) error { return runHelp(a, os.Stdout) }},
	}
}

// run dispatches a command line: a subcommand, -h, --version, or the
// service's own flags.
func run(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return serve(nil)
	}
	switch args[0] {
	case "-h", "-help", "--help":
		return runHelp(nil, stdout)
	case "-version", "--version":
		return runVersion(nil, stdout)
	}
	for _, c := range commandTable() {
		if c.name == args[0] {
			return c.run(args[1:])
		}
	}
	if !strings.HasPrefix(args[0], "-") {
		return fmt.Errorf("unknown subcommand %q (hapticd help lists them)", args[0])
	}
	return serve(args)
}

// newFlagSet is a subcommand's flag set; its -h says what the subcommand
// does before listing its flags.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("hapticd "+name, flag.ContinueOnError)
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "usage: hapticd %s [flags]\n\n", name)
		for _, c := range commandTable() {
			if c.name == name {
				fmt.Fprintf(out, "%s\n\n", capitalize(c.summary))
			}
		}
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprintln(out, "flags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parseNoArgs parses a subcommand's flags and refuses a word left over:
// flag parsing stops at the first one, so the flags after it would be
// silently dropped.
func parseNoArgs(fs *flag.FlagSet, args []string) error {
	if err := parseFlagSet(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (see %s -h)", fs.Arg(0), fs.Name())
	}
	return nil
}

// parseFlagSet parses args into fs. A bad flag is one line (exit prints it),
// not the error followed by the subcommand's every flag (about 90 lines for
// serve, which buried the line that said what was wrong); -h still lists
// them.
func parseFlagSet(fs *flag.FlagSet, args []string) error {
	out := fs.Output()
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(out)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
		return err
	case err != nil:
		return fmt.Errorf("%w (%s -h lists the flags)", err, fs.Name())
	}
	return nil
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func runHelp(args []string, out io.Writer) error {
	// help's own -h is the list, as every other subcommand answers -h.
	if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		args = nil
	}
	if len(args) > 1 {
		return fmt.Errorf("unexpected argument %q (hapticd help takes one subcommand's name)", args[1])
	}
	if len(args) > 0 {
		for _, c := range commandTable() {
			if c.name == args[0] && c.name != "help" {
				return c.run([]string{"-h"})
			}
		}
		if args[0] != "help" {
			return fmt.Errorf("unknown subcommand %q (hapticd help lists them)", args[0])
		}
	}
	fmt.Fprint(out, "hapticd is the haptic device control service.\n\nusage: hapticd [SUBCOMMAND] [flags]\n\nsubcommands:\n")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	for _, c := range commandTable() {
		fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.summary)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprint(out, "\nhapticd SUBCOMMAND -h lists the flags of one; hapticd serve -h those of the service.\n")
	return nil
}

func runVersion(args []string, out io.Writer) error {
	fs := newFlagSet("version")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	b := transport.ReadBuildInfo(version)
	modified := ""
	if vcsModified() {
		modified = " (modified)"
	}
	_, err := fmt.Fprintf(out, "hapticd %s\nrevision %s%s\nbuilt %s with %s\nlab build %s\n", b.Version, b.GitHash, modified, b.BuildTime, runtime.Version(), labBuild())
	return err
}

// exit ends the process with what err says: 0 for none (-h is not an
// error), 2 after the clean stop that follows a SIGQUIT dump, 1 otherwise.
func exit(err error) {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	fmt.Fprintln(os.Stderr, "hapticd:", err)
	if errors.Is(err, errQuitDumped) {
		os.Exit(2)
	}
	os.Exit(1)
}
