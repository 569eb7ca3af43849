package protocol

import "strings"

// EntriesMarkdown is the availability matrix of the configuration entries,
// generated from the key table: where each is set (WebSocket configure,
// HTTP route), its scope, the device types it acts on and how it is
// stored. docs/protocol.md carries it (TestEntriesMarkdownIsInTheDocs).
func EntriesMarkdown() string {
	var b strings.Builder
	b.WriteString("| entry | WebSocket `configure` | HTTP route | scope | device types | stored |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, k := range Keys() {
		ws, scope, stored := "no (HTTP only)", "device-global", "per device id"
		route := "`/{type}/{id}/config/" + k.Path() + "`"
		if k.SessionScoped() {
			ws, scope, stored = "`"+k.Name()+"`", "session and device", "per profile and device (with a profile)"
			route += " `?session=`"
		}
		if k == KeyBasis {
			ws = "`basis`, and `session.configure.basis` for every device"
		}
		types := "arm"
		if k.AppliesTo(TypeGrip) {
			types = "arm, grip"
		}
		b.WriteString("| `" + k.Name() + "` | " + ws + " | " + route + " | " + scope + " | " + types + " | " + stored + " |\n")
	}
	return b.String()
}
