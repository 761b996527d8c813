package main

import (
	"strings"
	"testing"
)

func TestServeRefusesBadRedisSettings(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--redis-url", "redis://127.0.0.1:1/0", "--redis-min-replicas", "-1"}, "--redis-min-replicas"},
		{[]string{"--redis-url", "redis://127.0.0.1:1?master_name=m&addr=nohostport"}, "parse redis sentinel url"},
	} {
		env, _, _ := testEnv(map[string]string{"AGENTBOT_WEBHOOK_SECRET": "s"})
		err := run(t.Context(), append([]string{"serve", "--addr", "127.0.0.1:0", "--no-workers", "--admin-addr", "off"}, tt.args...), env)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("serve %v = %v; want an error containing %q", tt.args, err, tt.want)
		}
	}
}
