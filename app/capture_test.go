package app_test

import (
	"slices"
	"testing"

	"github.com/agentbot/agentbot/app"
)

func TestClosingIssues(t *testing.T) {
	for _, tc := range []struct {
		body string
		want []int
	}{
		{"Fixes #12", []int{12}},
		{"This closes: octo/api#3 and resolves #4.", []int{3, 4}},
		{"fixed #7, Fixed #7 again", []int{7}},
		{"Closes other/repo#9", nil},               // another repository's issue
		{"See #5; relates to #6", nil},             // a mention closes nothing
		{"prefixes #8", nil},                       // a keyword inside a word is none
		{"Resolve OCTO/API#2\nclose #0", []int{2}}, // names compare case-insensitively; #0 is no issue
		{"", nil},
	} {
		if got := app.ClosingIssues("octo/api", tc.body); !slices.Equal(got, tc.want) {
			t.Errorf("ClosingIssues(%q) = %v, want %v", tc.body, got, tc.want)
		}
	}
}
