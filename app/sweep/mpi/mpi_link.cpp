// RankLink over MPI (plain C API, MPI_COMM_WORLD). Sends are MPI_Isend and
// receives MPI_Iprobe + MPI_Recv, so no rank ever blocks inside MPI: a
// blocking send of a large record could deadlock two ranks sending to each
// other, and Open MPI's blocking calls spin a core that the simulations need.
// Compiled only when CMake found MPI (TPUSIM_HAVE_MPI).
#include <cstdlib>
#include <list>
#include <mpi.h>
#include <poll.h>

#include "app/sweep/mpi/launch.h"

namespace tpusim::sweep {
namespace {

class MpiLink final : public RankLink {
 public:
  MpiLink() {
    MPI_Init(nullptr, nullptr);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  MpiLink(const MpiLink&) = delete;
  MpiLink& operator=(const MpiLink&) = delete;
  ~MpiLink() override {
    flush();
    MPI_Finalize();
  }

  [[noreturn]] void abort(int exit_code) override {
    MPI_Abort(MPI_COMM_WORLD, exit_code);
    std::_Exit(exit_code);
  }

  [[nodiscard]] int rank() const override { return rank_; }
  [[nodiscard]] int size() const override { return size_; }

  void send(int to, RankTag tag, std::string payload) override {
    pending_.push_back(Pending{std::move(payload), MPI_REQUEST_NULL});
    Pending& p = pending_.back();
    MPI_Isend(p.data.data(), static_cast<int>(p.data.size()), MPI_CHAR, to, static_cast<int>(tag), MPI_COMM_WORLD,
              &p.request);
    reap();
  }

  std::optional<RankMessage> try_receive() override {
    reap();
    int flag = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
    if (flag == 0) return std::nullopt;
    int n = 0;
    MPI_Get_count(&st, MPI_CHAR, &n);
    RankMessage m;
    m.from = st.MPI_SOURCE;
    m.tag = static_cast<RankTag>(st.MPI_TAG);
    m.payload.resize(static_cast<std::size_t>(n));
    MPI_Recv(m.payload.data(), n, MPI_CHAR, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return m;
  }

  void flush() override {
    reap();
    while (!pending_.empty()) {
      poll(nullptr, 0, 1);
      reap();
    }
  }

 private:
  struct Pending {
    std::string data;  // must outlive the send; std::list keeps it in place
    MPI_Request request;
  };
  void reap() {
    for (auto it = pending_.begin(); it != pending_.end();) {
      int done = 0;
      MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
      it = done != 0 ? pending_.erase(it) : std::next(it);
    }
  }
  int rank_ = 0;
  int size_ = 1;
  std::list<Pending> pending_;
};

}  // namespace

bool mpi_launcher_built() { return true; }

std::unique_ptr<RankLink> open_mpi_link(std::string& /*error*/) { return std::make_unique<MpiLink>(); }

}  // namespace tpusim::sweep
