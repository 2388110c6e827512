import Foundation
import ContinualCore

/// The materialised clients of this rank (`FederationStorage`), in the order they were built,
/// and each one's slot by client id: slots written by exactly one worker each within a parallel
/// section (`forEach`).
final class ClientTable: @unchecked Sendable {
    var clients: [FederatedClient] = []
    private(set) var slot: [Int: Int] = [:]
    init() {}
    func contains(_ id: Int) -> Bool { slot[id] != nil }
    func append(_ client: FederatedClient) {
        slot[client.id] = clients.count
        clients.append(client)
    }

    /// Runs `body` on the clients whose table index satisfies `filter`, in parallel (each client
    /// by one worker; one `LoopScratch` per worker).
    func forEach(where filter: (Int) -> Bool, workers: Int,
                 _ body: @escaping @Sendable (inout FederatedClient, inout LoopScratch) -> Void) {
        forEach(where: filter, workers: workers, { (c: inout FederatedClient, s: inout LoopScratch) -> Int in
            body(&c, &s)
            return 0
        }, collect: { _, _ in })
    }

    /// `forEach`, collecting what `body` returns by table index.
    func forEach<T>(where filter: (Int) -> Bool, workers: Int,
                    _ body: @escaping @Sendable (inout FederatedClient, inout LoopScratch) -> T,
                    collect: @escaping @Sendable (Int, T) -> Void) {
        let indices = clients.indices.filter(filter)
        guard !indices.isEmpty else { return }
        let n = min(workers, indices.count)
        clients.withUnsafeMutableBufferPointer { buffer in
            nonisolated(unsafe) let base = buffer.baseAddress!
            DispatchQueue.concurrentPerform(iterations: n) { w in
                var scratch = LoopScratch()
                var k = w
                while k < indices.count {
                    let i = indices[k]
                    collect(i, body(&base[i], &scratch))
                    k += n
                }
            }
        }
    }
}

/// The first error of a parallel section, by client id (the same whatever the threads' order).
final class ErrorBox: @unchecked Sendable {
    private let lock = NSLock()
    private(set) var first: (Int, String)? = nil
    func record(_ id: Int, _ message: String) {
        lock.lock()
        if first == nil || id < first!.0 { first = (id, message) }
        lock.unlock()
    }
}
