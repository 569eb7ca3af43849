//go:build !rpm

package main

// defaultFormats are the packages built when --formats is not given.
const defaultFormats = "deb"
