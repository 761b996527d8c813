// Package llmtest is a scripted model: an HTTP server speaking the
// chat-completions wire protocol that answers from a Script instead of a
// model, records every request it receives, and injects the faults real
// providers produce (429 with Retry-After, 5xx, malformed tool-call
// arguments, unknown tool names, garbage bodies, slow answers).
//
//	srv := llmtest.NewServer(t, llmtest.Script{Steps: []llmtest.Step{
//		{ToolCalls: []llmtest.Call{{Name: "read_file", Arguments: `{"path":"go.mod"}`}}},
//		{Text: "Done."},
//	}})
//	client, _ := llm.New(llm.Config{BaseURL: srv.URL()})
//	// ... drive the client, then assert on srv.Requests().
//
// Each request is answered by the first rule whose text matches the tool
// results the request ends with (the results of the previous answer's tool
// calls), otherwise by the next unused step. When no rule matches and the
// steps are used up, the answer is a 400 whose message says the script is
// exhausted. Like the real API, the server refuses with a 400 a request whose
// tool messages do not answer the preceding assistant's tool calls one for
// one, so a loop that loses a tool_call_id fails its tests.
//
// Every completion reports usage: the script's (or the step's) token counts
// when set, otherwise an estimate of four bytes a token, with the prefix the
// request shares with the previous one counted as cached, as a provider's
// prompt cache would.
//
// # Endpoints
//
// A Server deals its steps out in order to whoever asks, which a test of
// one loop wants. An Endpoint serves scripts to programs that reach it as
// a model provider, through their base URL ("agentbot-demo model"): the
// request's model picks the script, and each conversation is answered
// from a fresh copy of it, so that runs going at once each replay it whole.
//
// # Script files
//
// Load reads a script from YAML or JSON (for "agentbot-demo model" and
// recorded demos). Unknown keys are errors. The format:
//
//	usage:                     # optional; per answer unless a step sets its own
//	  prompt_tokens: 1200
//	  cached_tokens: 1000
//	  completion_tokens: 80
//	steps:                     # answered in order
//	  - text: "Reading the failing test first."
//	    tool_calls:
//	      - name: read_file
//	        arguments: {path: calc_test.go}     # a mapping is sent as JSON
//	  - tool_calls:
//	      - id: call_edit                       # optional; default call_<request>_<n>
//	        name: edit_file
//	        arguments: '{"path": "calc.go", '   # a string is sent verbatim, malformed or not
//	  - status: 429                             # a fault instead of an answer
//	    retry_after: 2s
//	    error: "Rate limit reached"
//	  - status: 500
//	  - body: '{"id": "x", "choices": []}'      # a raw 200 body
//	  - text: "Done."
//	    finish_reason: stop                     # default: tool_calls with calls, else stop
//	    delay: 100ms                            # answer late
//	rules:                     # tried first, against the trailing tool results
//	  - contains: "FAIL"                        # or regexp: "--- FAIL: Test\\w+"
//	    times: 1                                # 0 or absent: without limit
//	    tool_calls:
//	      - name: run_checks
//	        arguments: {}
//
// A step or rule sets exactly one of: text and/or tool_calls, status, body.
package llmtest
