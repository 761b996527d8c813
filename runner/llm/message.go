package llm

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
)

// Roles of chat messages.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one chat message. Assistant messages may carry tool calls; tool
// messages answer one call by its ID; user messages may carry images, for
// a model that reads them.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Images     []Image    `json:"images,omitempty"`
}

// Image is an image input, sent after the message's text as a data URL.
// Encoded as JSON it is its type and digest only: a transcript saved after
// every step carries no image's bytes, which whoever resumes it fetches
// again and finds by their digest.
type Image struct {
	MediaType string `json:"media_type"` // image/png, image/jpeg, image/gif or image/webp
	Digest    string `json:"digest"`     // "sha256:" and the hex SHA-256 of Data
	Data      []byte `json:"-"`
}

// NewImage returns the image data of type mediaType, with its digest.
func NewImage(mediaType string, data []byte) Image {
	return Image{MediaType: mediaType, Digest: ImageDigest(data), Data: data}
}

// ImageDigest is the digest of an image's bytes, as Image.Digest holds it.
func ImageDigest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// DataURL is the image as a data: URL, as the wire carries it.
func (im Image) DataURL() string {
	return "data:" + im.MediaType + ";base64," + base64.StdEncoding.EncodeToString(im.Data)
}

// ToolCall is the model's request to run a tool. Arguments are the raw JSON
// text the model produced, which may be malformed.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Tool is a function offered to the model, with the JSON Schema of its
// arguments.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Request is one chat completion request.
type Request struct {
	Model     string
	Messages  []Message
	Tools     []Tool
	MaxTokens int
	// Temperature is the sampling temperature; nil sends none, which
	// leaves the endpoint's default.
	Temperature *float64
}

// Usage counts the tokens of one call and what they cost.
type Usage struct {
	PromptTokens     int64   `json:"prompt_tokens"`
	CachedTokens     int64   `json:"cached_tokens"`
	CompletionTokens int64   `json:"completion_tokens"`
	CostUSD          float64 `json:"cost_usd"`
}

// Add returns the sum of two usages.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + v.PromptTokens,
		CachedTokens:     u.CachedTokens + v.CachedTokens,
		CompletionTokens: u.CompletionTokens + v.CompletionTokens,
		CostUSD:          u.CostUSD + v.CostUSD,
	}
}

// Total is the number of tokens sent and received.
func (u Usage) Total() int64 { return u.PromptTokens + u.CompletionTokens }

// Response is the model's answer to a Request.
type Response struct {
	Message      Message
	FinishReason string
	Usage        Usage
	Model        string
	// Unpriced says the price table has no entry for the model, so
	// Usage.CostUSD is 0 rather than the call's cost.
	Unpriced bool
}
