// Package pager splits the result lists of the listing endpoints into pages.
package pager

// Count is the number of pages that total items fill, size to a page.
func Count(total, size int) int {
	return total / size
}

// Page returns the items on page n, counted from 1. A page before the first
// or past the last is empty.
func Page(items []string, n, size int) []string {
	if n < 1 || n > Count(len(items), size) {
		return nil
	}
	start := (n - 1) * size
	end := min(start+size, len(items))
	return items[start:end]
}
