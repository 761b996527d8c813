// Package helm holds the test of agentbot's Helm chart. It is a module of
// its own so that the Helm and Kubernetes libraries it renders and decodes
// the chart with are never linked into the agentbot binary, nor fetched by
// those who only build it.
package helm

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// required are the values the chart cannot do without.
func required() map[string]any {
	return map[string]any{
		"app": map[string]any{"id": "123456"},
		"secrets": map[string]any{
			"privateKey":    "-----BEGIN RSA PRIVATE KEY-----\n...\n-----END RSA PRIVATE KEY-----\n",
			"webhookSecret": "whs", "redisPassword": "0123abcd", "modelAPIKey": "sk-x",
		},
	}
}

// objects is a rendered chart, decoded.
type objects struct {
	deployments  map[string]*appsv1.Deployment
	statefulSets map[string]*appsv1.StatefulSet
	services     map[string]*corev1.Service
	secrets      map[string]*corev1.Secret
	configMaps   map[string]*corev1.ConfigMap
	pdbs         map[string]*policyv1.PodDisruptionBudget
	policies     map[string]*networkingv1.NetworkPolicy
	ingresses    map[string]*networkingv1.Ingress
}

// render renders the chart with values over its defaults, as helm install
// would, and decodes every object strictly: an unknown or misplaced field
// anywhere fails.
func render(t *testing.T, values map[string]any) (objects, error) {
	t.Helper()
	chrt, err := loader.Load("agentbot")
	if err != nil {
		t.Fatal(err)
	}
	vals, err := chartutil.ToRenderValues(chrt, values,
		chartutil.ReleaseOptions{Name: "ab", Namespace: "agentbot", IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(chrt, vals)
	if err != nil {
		return objects{}, err
	}
	o := objects{
		deployments: map[string]*appsv1.Deployment{}, statefulSets: map[string]*appsv1.StatefulSet{},
		services: map[string]*corev1.Service{}, secrets: map[string]*corev1.Secret{},
		configMaps: map[string]*corev1.ConfigMap{}, pdbs: map[string]*policyv1.PodDisruptionBudget{},
		policies: map[string]*networkingv1.NetworkPolicy{}, ingresses: map[string]*networkingv1.Ingress{},
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(files[name], -1) {
			if isEmpty(doc) {
				continue
			}
			if err := o.decode([]byte(doc)); err != nil {
				t.Fatalf("%s, document %d: %v\n%s", name, i, err, doc)
			}
		}
	}
	return o, nil
}

// isEmpty tells whether a YAML document holds only comments and space.
func isEmpty(doc string) bool {
	for _, line := range strings.Split(doc, "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

func (o objects) decode(doc []byte) error {
	var meta metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		return err
	}
	var name string
	var err error
	switch gvk := meta.APIVersion + "/" + meta.Kind; gvk {
	case "apps/v1/Deployment":
		name, err = decodeStrict(doc, o.deployments)
	case "apps/v1/StatefulSet":
		name, err = decodeStrict(doc, o.statefulSets)
	case "v1/Service":
		name, err = decodeStrict(doc, o.services)
	case "v1/Secret":
		name, err = decodeStrict(doc, o.secrets)
	case "v1/ConfigMap":
		name, err = decodeStrict(doc, o.configMaps)
	case "policy/v1/PodDisruptionBudget":
		name, err = decodeStrict(doc, o.pdbs)
	case "networking.k8s.io/v1/NetworkPolicy":
		name, err = decodeStrict(doc, o.policies)
	case "networking.k8s.io/v1/Ingress":
		name, err = decodeStrict(doc, o.ingresses)
	default:
		return fmt.Errorf("the test does not know %s: add it, decoded strictly", gvk)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", meta.Kind, err)
	}
	if name == "" {
		return fmt.Errorf("%s without a name", meta.Kind)
	}
	return nil
}

// decodeStrict decodes doc into a new object, refusing unknown fields, and
// files it under its name in into.
func decodeStrict[T any, P interface {
	*T
	GetName() string
}](doc []byte, into map[string]P) (string, error) {
	obj := P(new(T))
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return "", err
	}
	into[obj.GetName()] = obj
	return obj.GetName(), nil
}

// pods returns every pod template with the name of its workload.
func (o objects) pods() map[string]corev1.PodTemplateSpec {
	out := map[string]corev1.PodTemplateSpec{}
	for n, d := range o.deployments {
		out[n] = d.Spec.Template
	}
	for n, s := range o.statefulSets {
		out[n] = s.Spec.Template
	}
	return out
}

func TestChartDefaults(t *testing.T) {
	t.Parallel()
	o, err := render(t, required())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ab-agentbot-intake", "ab-agentbot-worker"} {
		if o.deployments[want] == nil {
			t.Errorf("no Deployment %s", want)
		}
		if o.pdbs[want] == nil {
			t.Errorf("no PodDisruptionBudget %s", want)
		}
		if o.policies[want] == nil {
			t.Errorf("no NetworkPolicy %s", want)
		}
	}
	if o.statefulSets["ab-agentbot-redis"] == nil || o.services["ab-agentbot-redis"] == nil {
		t.Error("no Redis StatefulSet and Service")
	}
	secret := o.secrets["ab-agentbot"]
	if secret == nil {
		t.Fatal("no Secret")
	}
	for _, key := range []string{"private-key.pem", "webhook-secret", "redis-password", "model-api-key"} {
		if _, ok := secret.StringData[key]; !ok {
			t.Errorf("the Secret lacks %s", key)
		}
	}
	checkPods(t, o)
	checkRedisPolicy(t, o)

	// Workers reach DNS, Redis and the listed addresses, nothing else.
	cidrs := egressCIDRs(o.policies["ab-agentbot-worker"])
	if !slices.Contains(cidrs, "140.82.112.0/20") || slices.Contains(cidrs, "0.0.0.0/0") {
		t.Errorf("worker egress to %v; want GitHub's ranges and no wildcard", cidrs)
	}
	if len(o.ingresses) != 0 {
		t.Error("an Ingress by default")
	}
	for _, e := range o.deployments["ab-agentbot-worker"].Spec.Template.Spec.Containers[0].Env {
		if e.Name == "AGENTBOT_CONFIG" {
			t.Error("AGENTBOT_CONFIG set without a server config")
		}
	}
}

// egressCIDRs lists the address blocks a NetworkPolicy lets out, in order.
func egressCIDRs(p *networkingv1.NetworkPolicy) []string {
	var cidrs []string
	for _, rule := range p.Spec.Egress {
		for _, peer := range rule.To {
			if peer.IPBlock != nil {
				cidrs = append(cidrs, peer.IPBlock.CIDR)
			}
		}
	}
	return cidrs
}

// checkPods holds every pod to the chart's rules: no service-account token,
// probes, resources, no privilege escalation, all capabilities dropped.
func checkPods(t *testing.T, o objects) {
	t.Helper()
	for name, pod := range o.pods() {
		if a := pod.Spec.AutomountServiceAccountToken; a == nil || *a {
			t.Errorf("%s mounts a service-account token", name)
		}
		for _, c := range pod.Spec.Containers {
			if c.LivenessProbe == nil || c.ReadinessProbe == nil {
				t.Errorf("%s/%s lacks a liveness or readiness probe", name, c.Name)
			}
			if c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
				t.Errorf("%s/%s lacks a memory request or limit", name, c.Name)
			}
			sc := c.SecurityContext
			if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
				sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") ||
				sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
				t.Errorf("%s/%s: security context %+v", name, c.Name, sc)
			}
			checkRedisURL(t, name, c)
		}
	}
}

// checkRedisURL: an agentbot container's Redis URL takes its password from
// the Secret through an env entry defined before it, which Kubernetes
// expands; the password itself is never in the spec.
func checkRedisURL(t *testing.T, pod string, c corev1.Container) {
	t.Helper()
	pw, url := -1, -1
	for i, e := range c.Env {
		switch e.Name {
		case "AGENTBOT_REDIS_PASSWORD":
			pw = i
			if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Key != "redis-password" {
				t.Errorf("%s: AGENTBOT_REDIS_PASSWORD is not from the Secret", pod)
			}
		case "AGENTBOT_REDIS_URL":
			url = i
			if !strings.Contains(e.Value, ":$(AGENTBOT_REDIS_PASSWORD)@") {
				t.Errorf("%s: AGENTBOT_REDIS_URL %q has no password", pod, e.Value)
			}
		}
	}
	if c.Name != "redis" && (pw < 0 || url < pw) {
		t.Errorf("%s/%s: the Redis password (env %d) must come before the URL (env %d)", pod, c.Name, pw, url)
	}
}

// checkRedisPolicy: only the intake's and the workers' pods reach Redis.
func checkRedisPolicy(t *testing.T, o objects) {
	t.Helper()
	p := o.policies["ab-agentbot-redis"]
	if p == nil {
		t.Fatal("no NetworkPolicy for Redis")
	}
	if !slices.Contains(p.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) || len(p.Spec.Ingress) != 1 || len(p.Spec.Ingress[0].From) != 1 {
		t.Fatalf("Redis policy: %+v", p.Spec)
	}
	from := p.Spec.Ingress[0].From[0]
	if from.NamespaceSelector != nil || from.IPBlock != nil || from.PodSelector == nil {
		t.Fatalf("Redis reachable from %+v", from)
	}
	sel := from.PodSelector
	if sel.MatchLabels["app.kubernetes.io/instance"] != "ab" || len(sel.MatchExpressions) != 1 ||
		!slices.Equal(sel.MatchExpressions[0].Values, []string{"intake", "worker"}) {
		t.Errorf("Redis reachable from pods %+v", sel)
	}
}

func TestChartNonDefault(t *testing.T) {
	t.Parallel()
	values := map[string]any{
		"app":     map[string]any{"id": "42", "githubURL": "https://ghe.example.com/api/v3"},
		"secrets": map[string]any{"existingSecret": "agentbot-prod", "redisPassword": "abc123"},
		"redis":   map[string]any{"enabled": false},
		"externalRedis": map[string]any{
			"host": "redis.example.internal", "port": 6380, "db": 2, "tls": true, "cidr": "10.20.0.0/24",
		},
		"intake": map[string]any{
			"replicas":  3,
			"allowFrom": []any{map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "ingress-nginx"}}}},
			"ingress":   map[string]any{"enabled": true, "className": "nginx", "host": "bot.example.com", "tlsSecret": "bot-tls"},
		},
		"serverConfig": "setup: {allow_network: false}\nmax: {limits: {iterations: 30}}\n",
		"worker": map[string]any{
			"replicas": 4, "concurrency": 3, "sandboxRuntime": "runsc",
			"egress": map[string]any{"cidrs": []any{"140.82.112.0/20", "203.0.113.10/32"}, "ports": []any{443, 8443}},
		},
	}
	o, err := render(t, values)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.secrets) != 0 || len(o.statefulSets) != 0 {
		t.Errorf("with an existing Secret and an external Redis the chart made %d Secrets and %d StatefulSets", len(o.secrets), len(o.statefulSets))
	}
	if o.policies["ab-agentbot-redis"] != nil {
		t.Error("a Redis policy without the chart's Redis")
	}
	checkPods(t, o)
	worker := o.deployments["ab-agentbot-worker"]
	env := map[string]string{}
	for _, e := range worker.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef.Name != "agentbot-prod" {
			t.Errorf("%s from Secret %s; want agentbot-prod", e.Name, e.ValueFrom.SecretKeyRef.Name)
		}
	}
	for k, want := range map[string]string{
		"AGENTBOT_REDIS_URL":       "rediss://:$(AGENTBOT_REDIS_PASSWORD)@redis.example.internal:6380/2",
		"AGENTBOT_GITHUB_URL":      "https://ghe.example.com/api/v3",
		"AGENTBOT_SANDBOX_RUNTIME": "runsc",
		"AGENTBOT_CONCURRENCY":     "3",
		"AGENTBOT_APP_ID":          "42",
		"AGENTBOT_CONFIG":          "/etc/agentbot/config/server.yaml",
	} {
		if env[k] != want {
			t.Errorf("worker %s = %q; want %q", k, env[k], want)
		}
	}
	if cm := o.configMaps["ab-agentbot-worker-config"]; cm == nil || !strings.Contains(cm.Data["server.yaml"], "allow_network: false") {
		t.Errorf("server config ConfigMap: %+v", cm)
	}
	if *worker.Spec.Replicas != 4 || *o.deployments["ab-agentbot-intake"].Spec.Replicas != 3 {
		t.Error("replicas not taken from the values")
	}
	ing := o.ingresses["ab-agentbot-intake"]
	if ing == nil || *ing.Spec.IngressClassName != "nginx" || ing.Spec.TLS[0].SecretName != "bot-tls" ||
		ing.Spec.Rules[0].HTTP.Paths[0].Path != "/webhook" {
		t.Errorf("ingress: %+v", ing)
	}
	intake := o.policies["ab-agentbot-intake"]
	if len(intake.Spec.Ingress[0].From) != 1 || intake.Spec.Ingress[0].From[0].NamespaceSelector == nil {
		t.Errorf("intake ingress from %+v; want the ingress controller's namespace", intake.Spec.Ingress[0].From)
	}
	egress := egressCIDRs(o.policies["ab-agentbot-worker"])
	if !slices.Equal(egress, []string{"10.20.0.0/24", "140.82.112.0/20", "203.0.113.10/32"}) {
		t.Errorf("worker egress %v", egress)
	}
}

// TestChartRefusesBadValues: what the chart cannot run with fails the
// render with the value's name.
func TestChartRefusesBadValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(map[string]any)
		want   string
	}{
		{"no App id", func(v map[string]any) { v["app"] = map[string]any{"id": ""} }, "app.id is required"},
		{"no key", func(v map[string]any) { v["secrets"].(map[string]any)["privateKey"] = "" }, "secrets.privateKey"},
		{"no Redis password", func(v map[string]any) { v["secrets"].(map[string]any)["redisPassword"] = "" }, "secrets.redisPassword"},
		{"a password that breaks the URL", func(v map[string]any) { v["secrets"].(map[string]any)["redisPassword"] = "p@ss/word" }, "letters and digits only"},
		{"external Redis without a host", func(v map[string]any) { v["redis"] = map[string]any{"enabled": false} }, "externalRedis.host is required"},
		{"external Redis without its addresses", func(v map[string]any) {
			v["redis"] = map[string]any{"enabled": false}
			v["externalRedis"] = map[string]any{"host": "r.example"}
		}, "externalRedis.cidr is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := required()
			tt.change(v)
			_, err := render(t, v)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("render = %v; want an error naming %q", err, tt.want)
			}
		})
	}
}

// TestChartTypoFails: the strict decoding this test relies on refuses a
// misspelt field, as a typo in a template would be.
func TestChartTypoFails(t *testing.T) {
	t.Parallel()
	doc := []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  replica: 2\n")
	o := objects{deployments: map[string]*appsv1.Deployment{}}
	if err := o.decode(doc); err == nil || !strings.Contains(err.Error(), "replica") {
		t.Errorf("a misspelt field decoded: %v", err)
	}
}
