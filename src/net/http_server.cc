#include "net/http_module.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include <httplib.h>

namespace laggard::net {
namespace {

using Clock = std::chrono::steady_clock;

int MillisLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

// Waits until the socket's receive queue holds a whole request head (up to
// "\r\n\r\n") or `deadline` passes, reading nothing (MSG_PEEK): the head
// is then parsed by httplib from the socket without waiting. False on a
// timeout, a close, or a head over kMaxHeadBytes.
bool WaitForRequestHead(int sock, Clock::time_point deadline) {
  char buf[HttpServer::kMaxHeadBytes];
  for (;;) {
    pollfd p{sock, POLLIN, 0};
    int left = MillisLeft(deadline);
    if (left == 0 || ::poll(&p, 1, left) <= 0) return false;
    ssize_t n = ::recv(sock, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);
    if (n <= 0) return false;
    if (std::string_view(buf, static_cast<size_t>(n)).find("\r\n\r\n") != std::string_view::npos) {
      return true;
    }
    if (static_cast<size_t>(n) == sizeof buf) return false;
    // Part of a head: wait for more bytes, not for the same ones.
    ::usleep(1000);
  }
}

// One connection's bytes for httplib's request parser, each read and write
// bounded by a timeout (the head is already in the receive queue).
class SocketStream final : public httplib::Stream {
 public:
  SocketStream(int sock, int timeout_ms) : sock_(sock), timeout_ms_(timeout_ms) {}
  bool is_readable() const override { return Wait(POLLIN); }
  bool is_writable() const override { return Wait(POLLOUT); }
  ssize_t read(char* ptr, size_t size) override {
    if (!Wait(POLLIN)) return -1;
    return ::recv(sock_, ptr, size, 0);
  }
  ssize_t write(const char* ptr, size_t size) override {
    if (!Wait(POLLOUT)) return -1;
    return ::send(sock_, ptr, size, MSG_NOSIGNAL);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    Address(::getpeername, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    Address(::getsockname, ip, port);
  }
  int socket() const override { return sock_; }

 private:
  bool Wait(short events) const {
    pollfd p{sock_, events, 0};
    return ::poll(&p, 1, timeout_ms_) > 0;
  }
  template <typename F>
  void Address(F get, std::string& ip, int& port) const {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    ip.clear();
    port = 0;
    if (get(sock_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return;
    char host[INET6_ADDRSTRLEN] = {};
    if (addr.ss_family == AF_INET) {
      auto* a = reinterpret_cast<sockaddr_in*>(&addr);
      inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
      port = ntohs(a->sin_port);
    } else if (addr.ss_family == AF_INET6) {
      auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
      inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
      port = ntohs(a->sin6_port);
    }
    ip = host;
  }

  int sock_;
  int timeout_ms_;
};

// A task queue with one thread per connection, up to `max_threads`; later
// connections wait in order. Threads end after 2 s idle, so a burst costs
// threads only while it lasts.
class ConnectionThreads final : public httplib::TaskQueue {
 public:
  explicit ConnectionThreads(size_t max_threads) : max_(max_threads) {}
  void enqueue(std::function<void()> fn) override {
    std::unique_lock<std::mutex> lock(mu_);
    jobs_.push_back(std::move(fn));
    // Every queued connection needs an idle thread of its own (an idle one
    // woken a moment ago may not have taken its job yet): else a new one.
    if (jobs_.size() > idle_ && running_ < max_) {
      ++running_;
      std::thread([this] { Work(); }).detach();
    }
    cv_.notify_one();
  }
  // Runs the connections queued, then waits for every thread to end.
  void shutdown() override {
    std::unique_lock<std::mutex> lock(mu_);
    stop_ = true;
    cv_.notify_all();
    ended_.wait(lock, [&] { return running_ == 0; });
  }

 private:
  void Work() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (jobs_.empty()) {
        ++idle_;
        bool woke =
            cv_.wait_for(lock, std::chrono::seconds(2), [&] { return stop_ || !jobs_.empty(); });
        --idle_;
        if (!woke || jobs_.empty()) break;
      }
      std::function<void()> fn = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      fn();
      lock.lock();
    }
    // The last touch of this object: shutdown() returns only after it.
    if (--running_ == 0) ended_.notify_all();
  }

  const size_t max_;
  std::mutex mu_;
  std::condition_variable cv_, ended_;
  std::deque<std::function<void()>> jobs_;
  size_t running_ = 0, idle_ = 0;
  bool stop_ = false;
};

// httplib's server with its connection loop replaced (an override of its
// private virtual; the loop calls its protected process_request): a
// connection holds a thread only once its request head has arrived within
// HttpServer::kHeadTimeoutMs, and one client address waits past
// kHeadGraceMs on at most kMaxWaitingPerClient heads at once; beyond, the
// connection is closed.
class Server final : public httplib::Server {
 public:
  std::atomic<uint64_t> refused{0}, timed_out{0};

 private:
  static constexpr int kHeadTimeoutMs = HttpServer::kHeadTimeoutMs;
  static constexpr int kHeadGraceMs = HttpServer::kHeadGraceMs;
  static constexpr int kIoTimeoutMs = HttpServer::kIoTimeoutMs;
  static constexpr int kMaxWaitingPerClient = HttpServer::kMaxWaitingPerClient;
  static constexpr size_t kKeepAliveRequests = HttpServer::kKeepAliveRequests;
  bool process_and_close_socket(int sock) override {
    // A head that comes within kHeadGraceMs (any client on a sound
    // network, a burst of scrapes) is not counted against its client.
    Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(kHeadTimeoutMs);
    bool ok = WaitForRequestHead(sock, Clock::now() + std::chrono::milliseconds(kHeadGraceMs));
    if (!ok) {
      std::string ip = PeerAddress(sock);
      if (Admit(ip)) {
        ok = WaitForRequestHead(sock, deadline);
        Release(ip);
        if (!ok) ++timed_out;
      } else {
        ++refused;
      }
    }
    for (size_t served = 0; ok; ++served) {
      SocketStream strm(sock, kIoTimeoutMs);
      bool closed = false;
      bool last = served + 1 >= kKeepAliveRequests;
      if (!process_request(strm, last, closed, nullptr) || closed || last) break;
      // Keep-alive: the next head must come as soon (an idle client keeps
      // the thread no longer than a slow one).
      ok = WaitForRequestHead(sock, Clock::now() + std::chrono::milliseconds(kHeadTimeoutMs));
    }
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return true;
  }

  static std::string PeerAddress(int sock) {
    std::string ip;
    int port = 0;
    SocketStream(sock, 0).get_remote_ip_and_port(ip, port);
    return ip;
  }
  bool Admit(const std::string& ip) {
    std::lock_guard<std::mutex> lock(mu_);
    int& n = waiting_[ip];
    if (n >= kMaxWaitingPerClient) return false;
    ++n;
    return true;
  }
  void Release(const std::string& ip) {
    std::lock_guard<std::mutex> lock(mu_);
    if (--waiting_[ip] == 0) waiting_.erase(ip);
  }

  std::mutex mu_;
  std::map<std::string, int> waiting_;  // connections waiting on their head, by client address
};

class ServerBackend final : public HttpServerBackend {
 public:
  explicit ServerBackend(int threads) {
    size_t n = threads < 1 ? 1 : static_cast<size_t>(threads);
    server_.new_task_queue = [n] {
      return new ConnectionThreads(n + HttpServer::kMaxWaitingThreads);
    };
    server_.set_payload_max_length(64 * 1024);
    server_.set_socket_options([this](int fd) {
      int one = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      listen_fd_.store(fd);
    });
  }
  ~ServerBackend() override {
    if (thread_.joinable()) {
      Stop();
    } else if (bound_ && !started_) {
      ::close(listen_fd_.load());  // bound but never served (stop() closes a served one)
    }
  }

  void Get(const std::string& path, HttpServer::Handler handler) override {
    server_.Get(path, [h = std::move(handler)](const httplib::Request&, httplib::Response& res) {
      HttpResponse r = h();
      res.status = r.status;
      res.set_content(std::move(r.body), r.content_type.c_str());
    });
  }

  int Bind(const std::string& host, int port) override {
    int bound = 0;
    if (port == 0) {
      bound = server_.bind_to_any_port(host);
    } else if (server_.bind_to_port(host, port)) {
      bound = port;
    }
    if (bound <= 0) return 0;
    bound_ = true;
    // httplib listens with a backlog of 5; listen() again raises it (Linux
    // updates the backlog of a listening socket in place).
    if (int fd = listen_fd_.load(); fd >= 0) ::listen(fd, SOMAXCONN);
    return bound;
  }

  uint64_t refused_connections() const override { return server_.refused.load(); }
  uint64_t timed_out_connections() const override { return server_.timed_out.load(); }

  void Start() override {
    if (thread_.joinable()) return;
    started_ = true;
    done_ = false;
    thread_ = std::thread([this] {
      server_.listen_after_bind();
      done_ = true;
    });
  }

  void Stop() override {
    if (!thread_.joinable()) return;
    // stop() only acts on a running server: wait until the accept loop is up
    // (or has ended) so a Stop() right after Start() cannot be lost.
    while (!server_.is_running() && !done_.load()) std::this_thread::yield();
    server_.stop();
    thread_.join();
  }

 private:
  Server server_;
  std::atomic<int> listen_fd_{-1};
  std::atomic<bool> done_{false};
  bool bound_ = false;    // Bind() succeeded: listen_fd_ is open
  bool started_ = false;  // Start() ran: httplib's stop() or its listen loop closes the socket
  std::thread thread_;
};

}  // namespace

HttpServerBackend* NewHttpServer(int threads) { return new ServerBackend(threads); }

}  // namespace laggard::net
