package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
)

// Defaults for a zero Config.
const (
	DefaultBaseURL    = "https://api.openai.com/v1"
	DefaultTimeout    = 5 * time.Minute
	DefaultMaxRetries = 3
)

// Config says which endpoint a Client talks to and how patiently.
type Config struct {
	// BaseURL is the API root including its version path, as every
	// OpenAI-compatible server documents it: "https://api.openai.com/v1",
	// "http://localhost:11434/v1" (Ollama), "http://vllm:8000/v1".
	BaseURL string
	// APIKey is sent as a bearer token; local servers may not need one.
	APIKey string
	// Timeout bounds one attempt; the caller's context bounds the whole
	// call, retries included. Zero means DefaultTimeout.
	Timeout time.Duration
	// MaxRetries is how often a 408, 409, 429 or 5xx answer or a connection
	// failure is retried, with exponential backoff or after the server's
	// Retry-After. Zero means DefaultMaxRetries; negative means never.
	MaxRetries int
	// MaxRetryDelay caps the wait between attempts. A server asking for a
	// longer wait (Retry-After) gets no retry: the call fails at once with
	// the server's answer. Zero means the SDK's caps (two minutes for a
	// server's wait, eight seconds of backoff).
	MaxRetryDelay time.Duration
	// Prices per model name, for the cost of each call.
	Prices map[string]Price
	// HTTPClient is nil for a plain *http.Client.
	HTTPClient *http.Client
	// Logger is nil for slog.Default().
	Logger *slog.Logger
}

// Price is what a model costs, in USD per million tokens. Cached prompt
// tokens are billed at CachedInput, or at Input when CachedInput is zero: a
// table that does not know the discount overstates a cost rather than let a
// budget run over.
type Price struct {
	Input       float64 `json:"input" yaml:"input"`
	CachedInput float64 `json:"cached_input" yaml:"cached_input"`
	Output      float64 `json:"output" yaml:"output"`
}

// Cost returns the price in USD of the tokens counted in u.
func (p Price) Cost(u Usage) float64 {
	cached := p.CachedInput
	if cached == 0 {
		cached = p.Input
	}
	uncached := u.PromptTokens - u.CachedTokens
	return (float64(uncached)*p.Input + float64(u.CachedTokens)*cached + float64(u.CompletionTokens)*p.Output) / 1e6
}

// ConfigFromEnv reads AGENTBOT_LLM_BASE_URL (default DefaultBaseURL),
// AGENTBOT_LLM_API_KEY, AGENTBOT_LLM_TIMEOUT (a Go duration) and
// AGENTBOT_LLM_MAX_RETRIES. Prices come from the server config, not the
// environment.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	cfg := Config{
		BaseURL: getenv("AGENTBOT_LLM_BASE_URL"),
		APIKey:  getenv("AGENTBOT_LLM_API_KEY"),
	}
	if v := getenv("AGENTBOT_LLM_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return Config{}, fmt.Errorf("AGENTBOT_LLM_TIMEOUT=%q: want a positive duration such as 2m", v)
		}
		cfg.Timeout = d
	}
	if v := getenv("AGENTBOT_LLM_MAX_RETRIES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return Config{}, fmt.Errorf("AGENTBOT_LLM_MAX_RETRIES=%q: want a whole number", v)
		}
		cfg.MaxRetries = n
	}
	return cfg, nil
}

// Client calls a chat-completions endpoint. It is safe for concurrent use.
type Client struct {
	chat   openai.ChatCompletionService
	prices map[string]Price
	log    *slog.Logger

	// warned remembers which gaps (a model without a price, a server
	// without usage) were logged, so that a long loop logs each once.
	warned sync.Map
}

// New returns a client for cfg. It never reads OPENAI_* variables: the
// endpoint is exactly what cfg says.
func New(cfg Config) (*Client, error) {
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("model base URL %q: want an absolute http(s) URL such as %s", base, DefaultBaseURL)
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	retries := cfg.MaxRetries
	switch {
	case retries == 0:
		retries = DefaultMaxRetries
	case retries < 0:
		retries = 0
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	opts := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithHTTPClient(hc),
		option.WithRequestTimeout(timeout),
		option.WithMaxRetries(retries),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	if cfg.MaxRetryDelay > 0 {
		opts = append(opts, option.WithMaxRetryDelay(cfg.MaxRetryDelay))
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Client{
		// The service rather than openai.NewClient, which would fold in
		// OPENAI_BASE_URL, OPENAI_ORG_ID and friends from the environment.
		chat:   openai.NewChatCompletionService(opts...),
		prices: cfg.Prices,
		log:    log,
	}, nil
}

// Complete sends one chat completion request and returns the assistant's
// message with the call's usage and cost. Tool-call arguments come back as
// the model wrote them, valid JSON or not: judging them is the caller's job.
// An answer without a choice is an error.
func (c *Client) Complete(ctx context.Context, req Request) (Response, error) {
	params, err := toParams(req)
	if err != nil {
		return Response{}, fmt.Errorf("chat completion %s: %w", req.Model, err)
	}
	cc, err := c.chat.New(ctx, params)
	if err != nil {
		return Response{}, fmt.Errorf("chat completion %s: %w", req.Model, describe(err))
	}
	if len(cc.Choices) == 0 {
		return Response{}, fmt.Errorf("chat completion %s: answer %q has no choices", req.Model, cc.ID)
	}
	choice := cc.Choices[0]
	msg := Message{Role: RoleAssistant, Content: choice.Message.Content}
	if msg.Content == "" {
		msg.Content = choice.Message.Refusal
	}
	for i, tc := range choice.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			return Response{}, fmt.Errorf("chat completion %s: tool call %d has type %q; only function tools are offered", req.Model, i, tc.Type)
		}
		id := tc.ID
		if id == "" {
			// Some local servers omit ids; the tool result still needs one
			// to answer, unique within the conversation even when the
			// conversation resumes in another process.
			id = "call_" + uuid.NewString()
		}
		msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: id, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	resp := Response{
		Message:      msg,
		FinishReason: choice.FinishReason,
		Model:        cc.Model,
		Usage: Usage{
			PromptTokens:     cc.Usage.PromptTokens,
			CachedTokens:     cc.Usage.PromptTokensDetails.CachedTokens,
			CompletionTokens: cc.Usage.CompletionTokens,
		},
	}
	if !cc.JSON.Usage.Valid() {
		c.warnOnce(ctx, "usage/"+req.Model, "model server reports no usage; token budgets do not see these calls", "model", req.Model)
	}
	c.price(ctx, req.Model, &resp)
	return resp, nil
}

func (c *Client) warnOnce(ctx context.Context, key, msg string, args ...any) {
	if _, seen := c.warned.LoadOrStore(key, true); !seen {
		c.log.WarnContext(ctx, msg, args...)
	}
}

// price sets the cost of resp from the price of the requested model, or of
// the model the server says answered (an alias may resolve to a dated
// name). With neither priced the cost stays 0 and Unpriced is set.
func (c *Client) price(ctx context.Context, model string, resp *Response) {
	p, ok := c.prices[model]
	if !ok {
		p, ok = c.prices[resp.Model]
	}
	if !ok {
		resp.Unpriced = true
		c.warnOnce(ctx, "price/"+model, "no price for model; its calls count as free", "model", model, "answered_by", resp.Model)
		return
	}
	resp.Usage.CostUSD = p.Cost(resp.Usage)
}

// toParams maps a Request onto the SDK's request type.
func toParams(req Request) (openai.ChatCompletionNewParams, error) {
	if req.Model == "" {
		return openai.ChatCompletionNewParams{}, errors.New("no model")
	}
	if len(req.Messages) == 0 {
		return openai.ChatCompletionNewParams{}, errors.New("no messages")
	}
	p := openai.ChatCompletionNewParams{Model: req.Model}
	if req.MaxTokens > 0 {
		// max_tokens rather than max_completion_tokens: every compatible
		// server knows it.
		p.MaxTokens = param.NewOpt(int64(req.MaxTokens))
	}
	if req.Temperature != nil {
		p.Temperature = param.NewOpt(*req.Temperature)
	}
	for i, m := range req.Messages {
		mp, err := toMessageParam(m)
		if err != nil {
			return openai.ChatCompletionNewParams{}, fmt.Errorf("message %d: %w", i, err)
		}
		p.Messages = append(p.Messages, mp)
	}
	for _, t := range req.Tools {
		var schema map[string]any
		if len(t.Parameters) > 0 {
			if err := json.Unmarshal(t.Parameters, &schema); err != nil {
				return openai.ChatCompletionNewParams{}, fmt.Errorf("tool %s: parameters are not a JSON object: %w", t.Name, err)
			}
		}
		fn := openai.FunctionDefinitionParam{Name: t.Name, Parameters: schema}
		if t.Description != "" {
			fn.Description = param.NewOpt(t.Description)
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(fn))
	}
	return p, nil
}

func toMessageParam(m Message) (openai.ChatCompletionMessageParamUnion, error) {
	switch m.Role {
	case RoleSystem:
		return openai.SystemMessage(m.Content), nil
	case RoleUser:
		if len(m.Images) == 0 {
			return openai.UserMessage(m.Content), nil
		}
		parts := []openai.ChatCompletionContentPartUnionParam{openai.TextContentPart(m.Content)}
		for _, im := range m.Images {
			parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: im.DataURL()}))
		}
		return openai.UserMessage(parts), nil
	case RoleTool:
		if m.ToolCallID == "" {
			return openai.ChatCompletionMessageParamUnion{}, errors.New("tool message without a tool call id")
		}
		return openai.ToolMessage(m.Content, m.ToolCallID), nil
	case RoleAssistant:
		a := openai.ChatCompletionAssistantMessageParam{}
		if m.Content != "" || len(m.ToolCalls) == 0 {
			// An assistant message needs content or tool calls; an empty
			// answer is sent back as empty text.
			a.Content.OfString = param.NewOpt(m.Content)
		}
		for _, tc := range m.ToolCalls {
			a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID: tc.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
						Name:      tc.Name,
						Arguments: tc.Arguments,
					},
				},
			})
		}
		return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
	default:
		return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown role %q", m.Role)
	}
}

// describe adds what the server said to an API error: the SDK's own text
// carries only the status.
func describe(err error) error {
	apiErr, ok := errors.AsType[*openai.Error](err)
	if !ok {
		return err
	}
	detail := apiErr.Message
	if apiErr.Response != nil {
		if ra := apiErr.Response.Header.Get("Retry-After"); ra != "" {
			if _, err := strconv.ParseFloat(ra, 64); err == nil {
				ra += "s" // seconds, unless it is an HTTP date
			}
			detail += fmt.Sprintf(" (server asks to retry after %s)", ra)
		}
	}
	if detail == "" {
		return err
	}
	return fmt.Errorf("%w: %s", err, detail)
}
