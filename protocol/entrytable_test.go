package protocol

import (
	"os"
	"strings"
	"testing"
)

// The availability matrix in docs/protocol.md is the generated one, so a
// new entry cannot be missing from it.
func TestEntriesMarkdownIsInTheDocs(t *testing.T) {
	docs, err := os.ReadFile("../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	md := EntriesMarkdown()
	if !strings.Contains(string(docs), md) {
		t.Fatalf("docs/protocol.md lacks the generated entry table; paste:\n%s", md)
	}
	if n := strings.Count(md, "\n"); n != 2+len(Keys()) {
		t.Fatalf("%d lines for %d entries", n, len(Keys()))
	}
	for _, want := range []string{"| `navigation` | `navigation` | `/{type}/{id}/config/navigation` `?session=` | session and device | arm |",
		"| `force_clamp` | no (HTTP only) | `/{type}/{id}/config/passivity/force_clamp` | device-global | arm | per device id |",
		"| `preset` | `preset` | `/{type}/{id}/config/preset` `?session=` | session and device | arm, grip |"} {
		if !strings.Contains(md, want) {
			t.Errorf("no row %s", want)
		}
	}
}
