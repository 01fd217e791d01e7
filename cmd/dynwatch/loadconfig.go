package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/dynwatch/dynwatch/config"
	"github.com/dynwatch/dynwatch/plan"
)

// loadConfig loads and validates a config file; on failure it prints every
// problem, one per line, and returns the exit code.
func loadConfig(stderr io.Writer, path string) (*plan.File, int) {
	return loadConfigWith(stderr, path, config.Options{})
}

// loadConfigWith is loadConfig with the config's load options.
func loadConfigWith(stderr io.Writer, path string, o config.Options) (*plan.File, int) {
	file, code := loadValidConfig(stderr, path, o, "")
	if file == nil {
		return nil, code
	}
	for _, w := range file.Warnings() {
		fmt.Fprintln(stderr, w.Error())
	}
	return file, exitOK
}

// loadValidConfig is loadConfigWith without printing the file's warnings:
// run logs them instead. after ends the line that counts the problems
// (run's "; nothing was started").
func loadValidConfig(stderr io.Writer, path string, o config.Options, after string) (*plan.File, int) {
	file, err := plan.LoadWith(path, o)
	if err != nil {
		var ps config.Problems
		if errors.As(err, &ps) {
			for _, p := range ps {
				fmt.Fprintln(stderr, p.Error())
			}
			fmt.Fprintf(stderr, "%s: %d problem(s)%s\n", path, len(ps), after)
			return nil, exitUsage
		}
		fmt.Fprintln(stderr, "dynwatch:", err)
		return nil, exitUsage
	}
	return file, exitOK
}
