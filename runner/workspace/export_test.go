package workspace

// WaitSpares waits until no spare tree is being prepared or removed.
func (m *Manager) WaitSpares() { m.bg.Wait() }
