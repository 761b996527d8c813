package workspace

import (
	"slices"

	"github.com/agentbot/agentbot/app"
)

// IsTestFile reports whether name, a slash-separated path in a tree, is a
// test or a test's fixture by its language's conventions: what the
// tampering report lists as a test.
func IsTestFile(name string) bool {
	return slices.Contains(sensitiveKinds(name, nil), app.TamperTest)
}
