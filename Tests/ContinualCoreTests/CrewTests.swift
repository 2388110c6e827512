import CContinualKernels
import Foundation
import Testing
@testable import ContinualCore

/// What a thread of `CrewTests.onThread` returned (read after it ended).
private final class ThreadResult<R>: @unchecked Sendable { var value: R? }

/// The helper threads of split products (Crew.c): started at a thread's first split product,
/// reused by its next ones, stopped when that thread exits; the bits never depend on them.
@Suite struct CrewTests {
    /// This thread's helpers' kernel thread ids.
    static func helpers() -> [Int] {
        var tids = [Int](repeating: 0, count: 64)
        let n = Int(ck_crew_helpers(&tids, 64))
        return Array(tids.prefix(n))
    }

    /// Whether the kernel still lists thread `tid` of this process.
    static func alive(_ tid: Int) -> Bool {
        FileManager.default.fileExists(atPath: "/proc/self/task/\(tid)")
    }

    /// Runs `body` on a new thread to its end, then waits for that thread to exit.
    static func onThread<R>(_ body: @escaping @Sendable () -> R) -> R {
        let box = ThreadResult<R>(), done = DispatchSemaphore(value: 0)
        let thread = Thread { box.value = body(); done.signal() }
        thread.start()
        done.wait()
        while !thread.isFinished { usleep(1000) }
        return box.value!
    }

    @Test("a thread's split products reuse its helpers, which stop when the thread exits")
    func helpersAreKeptThenStopped() throws {
        let seen = Self.onThread { () -> (first: [Int], again: [Int], used: Int, sameBits: Bool, noneFirst: Bool, alive: Bool) in
            // (no #expect on this thread: it has no test context; everything is returned)
            let noneAtStart = Self.helpers().isEmpty
            let one = Kernels.withThreads(1) { KernelPathTests.products(64, 200, 100, seed: 9) }
            let noneForOneThread = Self.helpers().isEmpty
            Kernels.resetThreadsUsed()
            let three = Kernels.withThreads(3) { KernelPathTests.products(64, 200, 100, seed: 9) }
            let first = Self.helpers(), used = Kernels.threadsUsed
            let two = Kernels.withThreads(2) { KernelPathTests.products(64, 200, 100, seed: 9) }
            let again = Self.helpers()
            let alive = again.allSatisfy { $0 > 0 && Self.alive($0) } || !FileManager.default.fileExists(atPath: "/proc/self/task")
            let bits = [one, three, two].map { $0.y.map(\.bitPattern) + $0.dw.map(\.bitPattern) + $0.dx.map(\.bitPattern) }
            return (first, again, used, bits[0] == bits[1] && bits[0] == bits[2], noneAtStart && noneForOneThread, alive)
        }
        #expect(seen.noneFirst, "no helper before a split product, none for a product on one thread")
        #expect(seen.alive, "the helpers are running threads of this process")
        #expect(seen.used == 3)
        #expect(seen.sameBits)
        #expect(seen.first.count == 2, "two helpers for three threads")
        #expect(seen.again == seen.first, "the same helpers run the next products")
        guard FileManager.default.fileExists(atPath: "/proc/self/task") else { return }  // not Linux
        let deadline = Date().addingTimeInterval(5)
        while seen.first.contains(where: Self.alive), Date() < deadline { usleep(2000) }
        #expect(!seen.first.contains(where: Self.alive), "the helpers stop when their thread exits: \(seen.first)")
    }

    /// A process forked by a thread with helpers has none of them (only the forking thread is
    /// copied): its next split product must start new ones rather than wait forever for the old.
    /// The child calls only the C kernels on buffers allocated before the fork, then `_exit`s.
    /// (A fork of a multi-threaded process: glibc resets its own locks in the child, which is what
    /// the child's `malloc` and `pthread_create` need; ThreadSanitizer would refuse it.)
    @Test("a child forked after helpers started runs split products with helpers of its own")
    func forkedChildStartsItsOwnHelpers() throws {
        let (b, n, m) = (64, 200, 100)
        let status: Int32 = Self.onThread {
            let x = [Float](repeating: 0.5, count: b * n), w = [Float](repeating: 0.25, count: n * m)
            let bias = [Float](repeating: 0, count: m)
            var y = [Float](repeating: 0, count: b * m)
            ck_set_thread_threads(2)
            defer { ck_set_thread_threads(0) }
            ck_dense_forward(x, w, bias, &y, b, n, m)
            guard Self.helpers().count == 1 else { return -1 }
            y = [Float](repeating: 0, count: b * m)
            var tids = [Int](repeating: 0, count: 4)
            let pid = fork()
            if pid == 0 {  // the child: C calls on the buffers above, then _exit (no Swift runtime
                           // call another thread might have held a lock of at the fork). First it
                           // closes what it inherited (other tests' locked files, pipe ends), so
                           // it never keeps them past their owners' close.
                var fd: Int32 = 3
                while fd < 4096 { close(fd); fd += 1 }
                ck_dense_forward(x, w, bias, &y, b, n, m)
                _exit(ck_crew_helpers(&tids, 4) == 1 ? 0 : 3)
            }
            guard pid > 0 else { return -2 }
            let deadline = Date().addingTimeInterval(20)
            var raw: Int32 = 0
            while waitpid(pid, &raw, WNOHANG) == 0 {
                if Date() > deadline { kill(pid, SIGKILL); waitpid(pid, &raw, 0); return -3 }
                usleep(5000)
            }
            return raw
        }
        #expect(status == 0, "child status \(status) (-1: no helper before the fork, -3: the child hung)")
    }
}

