package bench

import (
	"io"
	"strings"
	"unicode/utf8"
)

// textTable lays out rows with the first column aligned left (labels) and
// the others right (numbers), two spaces apart.
type textTable struct{ rows [][]string }

func (t *textTable) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *textTable) write(w io.Writer) {
	var widths []int
	for _, r := range t.rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	for _, r := range t.rows {
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			switch {
			case i == 0:
				b.WriteString(c)
				if len(r) > 1 {
					b.WriteString(pad)
				}
			default:
				b.WriteString("  ")
				b.WriteString(pad)
				b.WriteString(c)
			}
		}
		b.WriteString("\n")
	}
	io.WriteString(w, b.String())
}
