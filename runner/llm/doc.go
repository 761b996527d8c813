// Package llm talks to a model through any OpenAI-compatible chat-completions
// endpoint (OpenAI, vLLM, Ollama, llama.cpp server, LiteLLM and gateways):
// one Request with the conversation and the tools on offer in, one Response
// with the assistant's message, its tool calls and the call's Usage out.
//
//	c, err := llm.New(llm.Config{BaseURL: "http://localhost:11434/v1", Prices: prices})
//	resp, err := c.Complete(ctx, llm.Request{Model: "qwen", Messages: msgs, Tools: tools})
//
// The wire work is the official openai-go SDK's, including its retries: 408,
// 409, 429 and 5xx answers and broken connections are retried with
// exponential backoff, or after the wait the server asks for in Retry-After
// (or Retry-After-Ms); a server asking for longer than Config.MaxRetryDelay
// is not retried at all. Config.Timeout bounds each attempt and the caller's
// context the whole call.
//
// Usage counts prompt, cached and completion tokens per call, and its cost
// comes from Config.Prices; a model missing from the table costs 0 and sets
// Response.Unpriced, since a wrong price must not stop a task.
//
// The conversation is the caller's and is sent as given, so that providers'
// prompt caching sees an unchanged prefix. Tool-call arguments are returned
// as the model wrote them, even when they are not JSON: the loop answers
// such a call with an error result instead of failing the task.
//
// Package llmtest is a scripted server on the same wire protocol for tests.
package llm
