package event

import "strings"

// MarkdownTable renders the event table for docs/events.md, so the
// documentation is generated from the same table as the events themselves
// (a docs test can compare its section with this).
func MarkdownTable() string {
	var b strings.Builder
	b.WriteString("| name | category | level | data | emitted when |\n")
	b.WriteString("|---|---|---|---|---|\n")
	for _, k := range kinds {
		b.WriteString("| `" + k.Name + "` | `" + k.Category + "` | `" + k.Level + "` | `{")
		b.WriteString(strings.Join(k.Fields, ", "))
		b.WriteString("}` | " + k.About + " |\n")
	}
	return b.String()
}
