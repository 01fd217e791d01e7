package tail

import (
	"fmt"
	"strings"
)

// singleEquals reports a lone '=' outside brackets and quotes, the kubectl
// field-selector and SQL habit, with the expression as it was probably meant:
// '==' compares ('=~' matches, for a '~=' typed the other way round).
// Unreported, 'a=3' would read as the path "a=3" existing.
func singleEquals(expr string) error {
	at := topLevel(expr, func(i int) bool {
		return expr[i] == '=' && (i+1 >= len(expr) || expr[i+1] != '=') && (i == 0 || !strings.ContainsRune("=!<>", rune(expr[i-1])))
	})
	if at < 0 {
		return nil
	}
	path, value := strings.TrimSpace(expr[:at]), strings.TrimSpace(expr[at+1:])
	if p, ok := strings.CutSuffix(path, "~"); ok {
		// '~=' for '=~': the regexp match, its characters swapped.
		return fmt.Errorf("cannot read %q: '~=' is not an operator; did you mean '%s =~ %s'?", expr, strings.TrimSpace(p), value)
	}
	return fmt.Errorf("cannot read %q: '=' is not an operator; did you mean '%s == %s'?", expr, path, value)
}
