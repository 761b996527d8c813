package agent

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentbot/agentbot/prompts"
	"github.com/agentbot/agentbot/runner/llm"
)

const (
	// digestAbove is the share of the context window past which old tool
	// results are digested.
	digestAbove = 0.75
	// keepRecent messages at the end of the transcript are never digested:
	// the model is working with them.
	keepRecent = 6
	// digestMin is the size below which a result is not worth a digest.
	digestMin = 1500
	// digestMark starts a digested result, so it is digested once only.
	digestMark = "[digest of an earlier result] "
)

// estimateTokens is a provider-neutral size of the transcript: four bytes
// a token, as the providers' own rules of thumb say.
func estimateTokens(msgs []llm.Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Content)
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Arguments)
		}
	}
	return n / 4
}

// digest replaces old, long tool results with short digests from the fast
// model once the transcript nears the window. It breaks the prompt cache
// once, which is what a full window would cost anyway.
func (a *Agent) digest(ctx context.Context) error {
	msgs := a.st.Messages
	if float64(estimateTokens(msgs)) < digestAbove*float64(a.cfg.ContextWindow) {
		return nil
	}
	calls := map[string]llm.ToolCall{}
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			calls[c.ID] = c
		}
	}
	model := a.cfg.Policy.Model.Fast
	if model == "" {
		model = a.cfg.Policy.Model.Edit
	}
	done := a.st.Counts.Digests
	for i := range max(0, len(msgs)-keepRecent) {
		m := &msgs[i]
		if m.Role != llm.RoleTool || len(m.Content) < digestMin || strings.HasPrefix(m.Content, digestMark) {
			continue
		}
		call := calls[m.ToolCallID]
		text, err := prompts.Digest(prompts.DigestData{Tool: call.Name, Target: call.Arguments, Output: m.Content})
		if err != nil {
			return err
		}
		start := time.Now()
		resp, err := a.cfg.Fast.Complete(ctx, llm.Request{Model: model, Messages: []llm.Message{{Role: llm.RoleUser, Content: text}}})
		a.observeModel(ModelCall{Step: a.st.Step + 1, Model: cmp.Or(resp.Model, model), Digest: true, Usage: resp.Usage, Took: time.Since(start), Err: err})
		if err != nil {
			return fmt.Errorf("task %s: digest the result of %s: %w", a.st.TaskID, call.Name, err)
		}
		a.st.Usage = a.st.Usage.Add(resp.Usage)
		// A digest is cut to a third of the smallest digested result, so
		// a rambling answer still saves tokens.
		summary := strings.TrimSpace(resp.Message.Content)
		digested := digestMark + strings.ToValidUTF8(summary[:min(len(summary), digestMin/3)], "")
		a.st.Counts.Digests++
		a.st.Counts.TokensSaved += int64((len(m.Content) - len(digested)) / 4)
		m.Content = digested
	}
	if a.st.Counts.Digests == done {
		return nil
	}
	return a.save(ctx)
}
