// Message passing between the ranks of a distributed sweep. Rank 0
// coordinates: it owns the queue of runs and is the only writer of the
// results file; every other rank pulls one run at a time, runs it as a child
// process and sends the finished record back. The protocol (tags below):
//
//   worker -> 0   kRequest  ""              a slot is free: send me a run
//   0 -> worker   kAssign   run (JSON)      run this (app/sweep/runner.cpp)
//   0 -> worker   kStop     ""              the queue is empty: finish up
//   worker -> 0   kResult   record (JSON)   one finished run
//   worker -> 0   kDone     ""              every run sent; about to exit
//
// Messages between two ranks arrive in the order they were sent (MPI's
// non-overtaking rule), so a worker's results always precede its kDone.
// The MPI implementation lives in app/sweep/mpi/; this header has no MPI.
#pragma once

#include <optional>
#include <string>

namespace tpusim::sweep {

enum class RankTag : int { kRequest = 1, kAssign = 2, kStop = 3, kResult = 4, kDone = 5 };

struct RankMessage {
  int from = 0;
  RankTag tag = RankTag::kRequest;
  std::string payload;
};

class RankLink {
 public:
  virtual ~RankLink() = default;
  [[nodiscard]] virtual int rank() const = 0;
  [[nodiscard]] virtual int size() const = 0;
  // Queues a message; never blocks waiting for the receiver.
  virtual void send(int to, RankTag tag, std::string payload) = 0;
  // The next message that has arrived, if any; never blocks.
  virtual std::optional<RankMessage> try_receive() = 0;
  // Waits until every queued send has been delivered to the transport.
  virtual void flush() = 0;
  // Ends every rank of the job at once (a broken protocol; never for a
  // failed run, which is just a record).
  [[noreturn]] virtual void abort(int exit_code) = 0;
};

}  // namespace tpusim::sweep
