// Package tally counts words and prints the counts for the nightly report.
package tally

import (
	"strconv"
	"strings"
)

// Count counts the words of text, split on white space.
func Count(text string) map[string]int {
	counts := map[string]int{}
	for _, w := range strings.Fields(text) {
		counts[w]++
	}
	return counts
}

// Report renders counts one "word count" a line, the most frequent word
// first and words of equal count in alphabetical order.
func Report(counts map[string]int) string {
	var b strings.Builder
	for w, n := range counts {
		b.WriteString(w + " " + strconv.Itoa(n) + "\n")
	}
	return b.String()
}
