package main

import (
	"debug/elf"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// glibcNeeded is the newest glibc version the binary at path links against
// ("2.34"), from the versions of its dynamic symbols (GLIBC_2.34), or ""
// for a binary that links no libc (a cgo-free Go build is static). A cgo
// build needs the glibc of the machine it was built on: a package that did
// not say so installed on an older release, whose service then failed at
// every start with "GLIBC_2.34 not found".
func glibcNeeded(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", fmt.Errorf("read %s as ELF: %w", path, err)
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if errors.Is(err, elf.ErrNoSymbols) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("%s's dynamic symbols: %w", path, err)
	}
	var newest [2]int
	found := ""
	for _, s := range syms {
		v, ok := strings.CutPrefix(s.Version, "GLIBC_")
		if !ok {
			continue
		}
		major, minor, ok := strings.Cut(v, ".")
		if !ok {
			continue
		}
		a, errA := strconv.Atoi(major)
		b, errB := strconv.Atoi(strings.SplitN(minor, ".", 2)[0])
		if errA != nil || errB != nil {
			continue
		}
		if found == "" || a > newest[0] || a == newest[0] && b > newest[1] {
			newest, found = [2]int{a, b}, fmt.Sprintf("%d.%d", a, b)
		}
	}
	return found, nil
}
