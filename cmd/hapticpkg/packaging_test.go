package main

import (
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The launchd plist is well-formed XML (launchctl refuses it otherwise, and
// a comment with two dashes in a row is enough) and runs the installed
// hapticd under its label.
func TestLaunchdPlist(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "packaging", "launchd", "org.hapticd.hapticd.plist"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := xml.NewDecoder(f)
	var strs []string
	inString := false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			inString = tok.Name.Local == "string"
		case xml.EndElement:
			inString = false
		case xml.CharData:
			if inString {
				strs = append(strs, string(tok))
			}
		}
	}
	for _, want := range []string{"org.hapticd.hapticd", "/usr/local/bin/hapticd"} {
		if !slices.Contains(strs, want) {
			t.Errorf("plist strings %q lack %q", strs, want)
		}
	}
}
