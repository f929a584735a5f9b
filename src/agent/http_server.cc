#include "agent/http_server.h"

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>

#include <fmt/format.h>
#include <httplib.h>

#include "agent/step_intake.h"

namespace laggard::agent {

struct HttpServer::Impl {
  httplib::Server server;
  std::atomic<int> listen_fd{-1};
  std::atomic<bool> done{false};
};

HttpServer::HttpServer(int threads) : impl_(std::make_unique<Impl>()) {
  size_t n = threads < 1 ? 1 : static_cast<size_t>(threads);
  impl_->server.new_task_queue = [n] { return new httplib::ThreadPool(n); };
  impl_->server.set_keep_alive_timeout(1);
  impl_->server.set_keep_alive_max_count(100);
  impl_->server.set_read_timeout(2, 0);
  impl_->server.set_write_timeout(5, 0);
  impl_->server.set_payload_max_length(64 * 1024);
  Impl* impl = impl_.get();
  impl_->server.set_socket_options([impl](int fd) {
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    impl->listen_fd.store(fd);
  });
}

HttpServer::~HttpServer() {
  if (thread_.joinable()) {
    Stop();
  } else if (int fd = impl_->listen_fd.load(); fd >= 0 && port_ > 0) {
    ::close(fd);  // bound by Listen() but never served
  }
}

void HttpServer::Get(const std::string& path, Handler handler) {
  impl_->server.Get(path, [h = std::move(handler)](const httplib::Request&, httplib::Response& res) {
    HttpResponse r = h();
    res.status = r.status;
    res.set_content(std::move(r.body), r.content_type.c_str());
  });
}

Status HttpServer::Listen(const std::string& host_port) {
  std::string host;
  int port = 0;
  if (!ParseHostPort(host_port, host, port)) {
    return Status::Error(fmt::format("--listen: expected HOST:PORT, got '{}'", host_port));
  }
  if (port == 0) {
    port_ = impl_->server.bind_to_any_port(host);
    if (port_ <= 0) return Status::Error(fmt::format("--listen {}: cannot bind", host_port));
  } else {
    if (!impl_->server.bind_to_port(host, port)) {
      return Status::Error(fmt::format("--listen {}: cannot bind (address in use or not local?)", host_port));
    }
    port_ = port;
  }
  // httplib listens with a backlog of 5; listen() again raises it (Linux
  // updates the backlog of a listening socket in place).
  if (int fd = impl_->listen_fd.load(); fd >= 0) ::listen(fd, SOMAXCONN);
  return Status::Ok();
}

void HttpServer::Start() {
  if (thread_.joinable()) return;
  impl_->done = false;
  thread_ = std::thread([this] {
    impl_->server.listen_after_bind();
    impl_->done = true;
  });
}

void HttpServer::Stop() {
  if (!thread_.joinable()) return;
  // stop() only acts on a running server: wait until the accept loop is up
  // (or has ended) so a Stop() right after Start() cannot be lost.
  while (!impl_->server.is_running() && !impl_->done.load()) std::this_thread::yield();
  impl_->server.stop();
  thread_.join();
}

}  // namespace laggard::agent
