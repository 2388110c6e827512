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
        let seen = Self.onThread { () -> (first: [Int], again: [Int], used: Int, sameBits: Bool) in
            #expect(Self.helpers().isEmpty)
            let one = Kernels.withThreads(1) { KernelPathTests.products(64, 200, 100, seed: 9) }
            #expect(Self.helpers().isEmpty, "a product on one thread starts no helper")
            Kernels.resetThreadsUsed()
            let three = Kernels.withThreads(3) { KernelPathTests.products(64, 200, 100, seed: 9) }
            let first = Self.helpers(), used = Kernels.threadsUsed
            let two = Kernels.withThreads(2) { KernelPathTests.products(64, 200, 100, seed: 9) }
            let again = Self.helpers()
            #expect(again.allSatisfy { $0 > 0 && Self.alive($0) } || !FileManager.default.fileExists(atPath: "/proc/self/task"))
            let bits = [one, three, two].map { $0.y.map(\.bitPattern) + $0.dw.map(\.bitPattern) + $0.dx.map(\.bitPattern) }
            return (first, again, used, bits[0] == bits[1] && bits[0] == bits[2])
        }
        #expect(seen.used == 3)
        #expect(seen.sameBits)
        #expect(seen.first.count == 2, "two helpers for three threads")
        #expect(seen.again == seen.first, "the same helpers run the next products")
        guard FileManager.default.fileExists(atPath: "/proc/self/task") else { return }  // not Linux
        let deadline = Date().addingTimeInterval(5)
        while seen.first.contains(where: Self.alive), Date() < deadline { usleep(2000) }
        #expect(!seen.first.contains(where: Self.alive), "the helpers stop when their thread exits: \(seen.first)")
    }
}
