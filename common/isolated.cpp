#include "common/isolated.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tpusim {

std::optional<std::string> run_isolated(const std::function<std::string()>& fn, std::string& error) {
  int fds[2];
  if (pipe(fds) != 0) {
    error = fmt::format("pipe: {}", std::strerror(errno));
    return std::nullopt;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    error = fmt::format("fork: {}", std::strerror(errno));
    close(fds[0]);
    close(fds[1]);
    return std::nullopt;
  }
  if (pid == 0) {
    close(fds[0]);
    int code = 0;
    try {
      const std::string out = fn();
      size_t off = 0;
      while (off < out.size()) {
        const ssize_t n = write(fds[1], out.data() + off, out.size() - off);
        if (n <= 0) break;
        off += static_cast<size_t>(n);
      }
    } catch (const std::exception& e) {
      const std::string msg = fmt::format("internal error: {}", e.what());
      (void)!write(STDERR_FILENO, msg.data(), msg.size());
      code = 3;
    }
    close(fds[1]);
    _exit(code);  // no atexit handlers, no SystemC teardown
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  while (true) {
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    error = fmt::format("the simulation process died of signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
    return std::nullopt;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    error = fmt::format("the simulation process exited with status {}", WEXITSTATUS(status));
    return std::nullopt;
  }
  return out;
}

}  // namespace tpusim
