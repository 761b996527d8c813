package llmtest_test

import (
	"context"
	"fmt"
	"log"

	"github.com/agentbot/agentbot/runner/llm"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
)

// A script stands in for the model outside tests, as "agentbot-demo model
// FILE" serves it.
func ExampleStart() {
	script, err := llmtest.Parse([]byte(`
steps:
  - tool_calls: [{name: read_file, arguments: {path: go.mod}}]
`))
	if err != nil {
		log.Fatal(err)
	}
	srv, err := llmtest.Start(script)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	c, err := llm.New(llm.Config{BaseURL: srv.URL(), Prices: map[string]llm.Price{"scripted": {}}})
	if err != nil {
		log.Fatal(err)
	}
	resp, err := c.Complete(context.Background(), llm.Request{
		Model:    "scripted",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "What module is this?"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	call := resp.Message.ToolCalls[0]
	fmt.Println(call.ID, call.Name, call.Arguments)
	// Output: call_1_1 read_file {"path":"go.mod"}
}
