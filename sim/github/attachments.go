package github

import (
	"net/http"
	"strconv"
)

// AddAttachment stores data as a user attachment, as GitHub does with a
// file dropped into a comment, and returns its address
// (BASE/user-attachments/assets/ID), to be embedded in a comment's
// Markdown. The file is served as is, to anyone, with the content type
// the bytes sniff as.
func (s *Server) AddAttachment(data []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.attachments == nil {
		s.attachments = map[string][]byte{}
	}
	id := randomHex(16)
	s.attachments[id] = append([]byte(nil), data...)
	return s.base + "/user-attachments/assets/" + id
}

func (s *Server) getAttachment(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	data, ok := s.attachments[r.PathValue("id")]
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", http.DetectContentType(data))
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.Write(data)
}
