//go:build rpm

// The rpm packager is behind a build tag: nFPM's rpm writer depends on
// go.digitalxero.dev/rpm, which this project's build machines cannot fetch.
// Where it can be fetched: go get github.com/goreleaser/nfpm/v2/rpm@v2.48.0
// and go build -tags rpm ./cmd/hapticpkg.

package main

import _ "github.com/goreleaser/nfpm/v2/rpm" // registers the rpm packager

// defaultFormats are the packages built when --formats is not given.
const defaultFormats = "deb,rpm"
