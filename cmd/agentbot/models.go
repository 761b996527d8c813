package main

import (
	"log/slog"

	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/runner/llm"
)

// newModel returns the workers' model client: its endpoint from the
// environment (AGENTBOT_LLM_*), its prices from the server config, so that
// the cost of every call is counted against the policy's limits.cost_usd.
func newModel(env Env, server policy.ServerConfig, log *slog.Logger) (*llm.Client, error) {
	cfg, err := llm.ConfigFromEnv(env.Getenv)
	if err != nil {
		return nil, err
	}
	cfg.Logger = log
	cfg.Prices = modelPrices(server.Prices)
	return llm.New(cfg)
}

// modelPrices is the server config's price table as the client reads it.
func modelPrices(prices map[string]policy.ModelPrice) map[string]llm.Price {
	if len(prices) == 0 {
		return nil
	}
	out := make(map[string]llm.Price, len(prices))
	for name, p := range prices {
		out[name] = llm.Price{Input: p.Prompt, CachedInput: p.CachedPrompt, Output: p.Completion}
	}
	return out
}
