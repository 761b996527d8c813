// Package worker supervises a worker's place in a deployment: the lease
// that tells the other workers sharing its Redis that it is alive, and the
// sweep that removes what workers known dead left behind (their sandbox
// containers with their volumes and networks, and their work trees).
//
// A worker's id names its deployment, so a sandbox's label says whose
// lease decides its fate; users of the engine that hold no lease (agentbot
// run and eval) label theirs with ids outside IDPrefix and are never
// judged. The package links neither Docker nor GitHub: it is given what
// removes orphans as the two methods it calls.
package worker
