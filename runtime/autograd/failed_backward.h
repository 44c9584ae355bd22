// After a backward that threw: LibTorch's engine stops popping the calling thread's CPU ready queue
// as soon as the failed graph task completes with its error, so the tasks that were ready then
// stay queued, each holding the gradients of its input buffer. A later backward pops them (and
// drops them, their graph task being gone) only before its own nodes, which all have higher
// sequence numbers and run first: they would stay for the thread's life. Recovery calls this to
// free them now.
#pragma once

namespace shardfuzz::autograd {

// Runs a backward through one node of sequence number 0 (the engine's lowest priority) on the
// calling thread, so every stale task in its ready queue is popped and dropped first.
void drop_failed_backward_tasks();

}  // namespace shardfuzz::autograd
