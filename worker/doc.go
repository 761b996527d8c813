// Package worker runs a worker: it assembles the parts its caller built
// from flags (the runner's configuration, the sandbox engine, Redis)
// around the worker's own id, and supervises them: the lease that tells
// the other workers sharing its Redis that it is alive, the queue of
// tasks, the recorder of the pull requests' outcomes, and the sweep that
// removes what workers known dead left behind (their sandbox containers
// with their volumes and networks, and their work trees). Shutting down,
// it hands the running tasks back to the queue, closes the sandboxes, and
// only then releases the lease.
//
// A worker's id names its deployment, so a sandbox's label says whose
// lease decides its fate; users of the engine that hold no lease (agentbot
// run and eval) label theirs with ids outside IDPrefix and are never
// judged. The package links neither Docker nor GitHub: the engine and the
// installation tokens are given to it as interfaces.
package worker
