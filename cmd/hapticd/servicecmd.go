package main

import (
	"path/filepath"
	"strings"
)

// serviceName is the Windows service's name (sc query hapticd).
const serviceName = "hapticd"

const serviceUsage = `usage: hapticd service install [FLAGS...] | uninstall | start | stop

  install    register hapticd as a Windows service that starts at boot;
             FLAGS are the service's (hapticd serve -h) and are given to it on
             every start. The state directory defaults to
             %ProgramData%\hapticd; logs go to hapticd.log inside it
             (JSON lines unless --log-format is given).
  uninstall  stop the service if it runs and remove it
  start      start the service and wait until it runs
  stop       stop the service and wait until it has stopped
`

// serviceRunArgs is the command line the Service Control Manager starts
// hapticd with: "service run" and the user's flags, plus a state directory
// under programData when they named none (the service runs as LocalSystem,
// whose %LOCALAPPDATA% is buried under System32) and JSON logs (the log is
// a file, where console colours would be noise).
func serviceRunArgs(flags []string, programData string) []string {
	out := append([]string{"service", "run"}, flags...)
	if !hasFlag(flags, "log-format") {
		out = append(out, "--log-format", "json")
	}
	if !hasFlag(flags, "state-dir") {
		if programData == "" {
			programData = `C:\ProgramData`
		}
		out = append(out, "--state-dir", filepath.Join(programData, "hapticd"))
	}
	return out
}

// hasFlag tells whether args set the flag name, in any of the forms the
// flag package accepts (-name, --name, with =value or a separate value).
func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		trimmed := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if trimmed == a {
			continue // not a flag
		}
		if n, _, _ := strings.Cut(trimmed, "="); n == name {
			return true
		}
	}
	return false
}
