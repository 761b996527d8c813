// Package limits reads the service's limits file: one "name=number" a
// line, with blank lines and lines starting with # skipped.
package limits

import (
	"fmt"
	"strconv"
	"strings"
)

// Parse reads the limits in text.
func Parse(text string) (map[string]int, error) {
	limits := map[string]int{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("line %d: want name=number, got %q", i+1, line)
		}
		n, _ := strconv.Atoi(strings.TrimSpace(value))
		limits[strings.TrimSpace(name)] = n
	}
	return limits, nil
}
