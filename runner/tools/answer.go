package tools

import (
	"context"
	"errors"
	"strings"
)

// A read-only set answers a question about the repository: the model may
// list, read and search the tree, and ends with answer; nothing writes to
// the tree and nothing runs in a sandbox, so no write or shell tool is
// offered, whatever the policy allows.

type answerArgs struct {
	Answer string `json:"answer"`
}

func (a answerArgs) validate() error {
	if strings.TrimSpace(a.Answer) == "" {
		return errors.New("answer is required: the reply to post, in Markdown")
	}
	return nil
}

// answer ends a read-only task with the reply to post.
func answer(_ context.Context, _ *Set, a answerArgs) Result {
	return Result{Outcome: OK, Target: "answer", Done: true, Summary: strings.TrimSpace(a.Answer), Output: "accepted: the answer will be posted."}
}

// readTools is the read tools and then ending, the tools a set that
// changes nothing ends with.
func readTools(ending ...*tool) []*tool {
	var out []*tool
	for _, t := range registry() {
		if t.class == ClassRead {
			out = append(out, t)
		}
	}
	return append(out, ending...)
}

// readOnlyRegistry is the read tools and answer.
func readOnlyRegistry() []*tool {
	return readTools(&tool{name: "answer", class: ClassCheck, schema: answerSchema, run: withArgs(answer),
		desc: "Give your answer to the question and end the task. Cite code as `path:line` or `path:start-end`; each citation becomes a link to the commit you read."})
}

const answerSchema = `{"type":"object","properties":{
"answer":{"type":"string","description":"the reply to post, in Markdown, citing code as path:line"}},"required":["answer"],"additionalProperties":false}`
