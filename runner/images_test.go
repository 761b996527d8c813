package runner_test

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/llm"
)

func pngBytes(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestAttachedImagesReachAVisionModel(t *testing.T) {
	t.Parallel()
	w := newWorld(t, quickPolicy+"model: {vision: true}\n", demoScript(t))
	shot := pngBytes(t)
	small := w.sim.AddAttachment(shot)
	huge := w.sim.AddAttachment(append(pngBytes(t), make([]byte, 5<<20)...))
	text := w.sim.AddAttachment([]byte("just text, not an image"))
	body := "The chart is off:\n![chart](" + small + ")\n![big](" + huge + ")\n<img src=\"" + text + "\">\n![elsewhere](https://example.com/x.png)"
	if _, err := w.sim.AddComment(repo, w.issue, "ada", body); err != nil {
		t.Fatal(err)
	}
	mallory := w.sim.AddAttachment(pngBytes(t))
	if _, err := w.sim.AddComment(repo, w.issue, "mallory", "![x]("+mallory+")"); err != nil {
		t.Fatal(err)
	}
	tk := w.task(t, "T1")
	if err := w.runner.ProcessTask(t.Context(), tk); err != nil {
		t.Fatal(err)
	}
	msgs := w.model.Requests()[0].Messages
	if len(msgs) != 2 || msgs[1].Role != llm.RoleUser {
		t.Fatalf("first request %+v; want the system prompt and the task", msgs)
	}
	if im := msgs[1].Images; len(im) != 1 || im[0].MediaType != "image/png" || !bytes.Equal(im[0].Data, shot) {
		t.Errorf("the task message carries %d images; want the one small PNG", len(im))
	}
	refused := map[string]string{}
	events, _ := w.traces.Trace(t.Context(), "T1")
	for _, e := range events {
		if e.Kind == app.TraceRefusal && e.Name == "image" {
			refused[e.Args] = e.Detail
		}
	}
	for u, want := range map[string]string{huge: "the limit is 5242880", text: "of type text/plain", "https://example.com/x.png": "not a GitHub user attachment"} {
		if !strings.Contains(refused[u], want) {
			t.Errorf("refusal of %s: %q; want %q", u, refused[u], want)
		}
	}
	if _, ok := refused[mallory]; ok || len(refused) != 3 {
		t.Errorf("refusals %v; the outsider's image is never looked at", refused)
	}
}

func TestImagesStayOutWithoutVision(t *testing.T) {
	t.Parallel()
	w := newWorld(t, quickPolicy, demoScript(t))
	if _, err := w.sim.AddComment(repo, w.issue, "ada", "![chart]("+w.sim.AddAttachment(pngBytes(t))+")"); err != nil {
		t.Fatal(err)
	}
	tk := w.task(t, "T1")
	if err := w.runner.ProcessTask(t.Context(), tk); err != nil {
		t.Fatal(err)
	}
	for _, m := range w.model.Requests()[0].Messages {
		if len(m.Images) > 0 {
			t.Errorf("a model without vision was sent %d images", len(m.Images))
		}
	}
}
