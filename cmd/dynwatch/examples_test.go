package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every command and subcommand's --help has an Examples section, and each
// example of dynwatch itself uses only flags its command takes (it is run
// with --help appended: an unknown flag fails before --help is reached).
func TestEveryCommandHasExamples(t *testing.T) {
	var code int
	root := newRoot(context.Background(), &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}, &code)
	var paths [][]string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || strings.HasPrefix(c.Name(), "__") {
			return
		}
		paths = append(paths, strings.Fields(c.CommandPath())[1:])
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if len(paths) < len(commands())+6 { // the root, help, completion and its four shells
		t.Fatalf("walked %d commands: %v", len(paths), paths)
	}
	for _, path := range paths {
		t.Run(strings.Join(append([]string{"dynwatch"}, path...), " "), func(t *testing.T) {
			code, stdout, _ := runCLI(t, append(path, "--help")...)
			_, section, found := strings.Cut(stdout, "\nExamples:\n")
			section, _, _ = strings.Cut(section, "\n\n")
			if code != exitOK || !found || strings.TrimSpace(section) == "" {
				t.Fatalf("exit %d, no Examples section:\n%s", code, stdout)
			}
			for _, line := range strings.Split(section, "\n") {
				line = strings.TrimSpace(line)
				if !strings.HasPrefix(line, "dynwatch ") {
					continue // a comment, or a shell's own command around dynwatch's
				}
				line = beforeShell(line)
				args := append(shellWords(t, line)[1:], "--help")
				if code, _, stderr := runCLI(t, args...); code != exitOK || stderr != "" {
					t.Errorf("example %q: exit %d, stderr %q", line, code, stderr)
				}
			}
		})
	}
}

// beforeShell cuts a command line at its first pipe or redirection outside
// single quotes: what follows is the shell's, not dynwatch's.
func beforeShell(line string) string {
	quoted := false
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\'':
			quoted = !quoted
		case !quoted && (strings.HasPrefix(line[i:], " | ") || strings.HasPrefix(line[i:], " > ")):
			return line[:i]
		}
	}
	return line
}
