package llm_test

import (
	"bytes"
	"testing"

	"github.com/agentbot/agentbot/runner/llm"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
)

func TestImagesTravelAsDataURLs(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Script{Steps: []llmtest.Step{{Text: "I see a chart."}}})
	c := newClient(t, srv, llm.Config{APIKey: "sk-test"})
	png := []byte("\x89PNG\r\n\x1a\nfake")
	req := llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "What is wrong here?",
		Images: []llm.Image{{MediaType: "image/png", Data: png}, {MediaType: "image/gif", Data: []byte("GIF89a")}}}}}
	if _, err := c.Complete(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	got := srv.Requests()[0].Messages[0]
	if got.Content != "What is wrong here?" || len(got.Images) != 2 || got.Images[0].MediaType != "image/png" ||
		!bytes.Equal(got.Images[0].Data, png) || got.Images[1].MediaType != "image/gif" {
		t.Errorf("the server received %+v", got)
	}
}
