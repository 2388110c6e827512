/// How the processes of one federated run exchange bytes. Each process (rank) simulates the
/// clients whose id ≡ rank (mod size); after every round all ranks gather every rank's
/// contribution, in rank order, and run the same server step on the same bytes — so the results
/// are bit-identical for any number of ranks (and to the single-process run, `SingleProcess`).
public protocol FederationTransport: AnyObject {
    var rank: Int { get }
    var size: Int { get }
    /// Every rank's `bytes`, indexed by rank (collective: every rank must call it).
    func allGather(_ bytes: [UInt8]) throws -> [[UInt8]]
}

/// One process holds every client.
public final class SingleProcess: FederationTransport {
    public init() {}
    public var rank: Int { 0 }
    public var size: Int { 1 }
    public func allGather(_ bytes: [UInt8]) throws -> [[UInt8]] { [bytes] }
}

extension FederationRunner {
    /// The transport federated runs of this process use: `SingleProcess` unless the CLI set up
    /// MPI (`continual run --mpi`) before running.
    nonisolated(unsafe) public static var transport: any FederationTransport = SingleProcess()
}

/// Open MPI as a federation transport: each rank simulates its slice of the clients
/// (`continual run --mpi`, or any run launched by mpirun/srun).
extension MPIWorld: FederationTransport {}
