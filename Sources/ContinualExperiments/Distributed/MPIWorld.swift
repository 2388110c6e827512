import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The processes of one MPI job (`MPI_COMM_WORLD`), or a world of one process when the program
/// was not started by an MPI launcher.
///
/// The transport moves bytes; what they mean (parameters, updates, counts) is the caller's.
/// Open MPI is **loaded at run time** (`dlopen("libmpi.so.40")`, then `"libmpi.so"`), never
/// linked, so the package builds and tests without MPI, and a program that is not launched by
/// `mpirun`/`srun` never loads it:
///
/// ```swift
/// let world = try MPIWorld.start()          // size 1 without a launcher; MPI_Init under one
/// let mine: [UInt8] = encode(myClients)
/// let everyone = try world.allGather(mine)  // everyone[r] is rank r's bytes, on every rank
/// try world.finish()                        // MPI_Finalize, before the process exits
/// ```
///
/// Requirements and limits:
/// - **Open MPI** (4.x or later; Debian: `apt-get install openmpi-bin`). The binding uses Open MPI's
///   ABI, in which handles are addresses of `ompi_mpi_*` objects; MPICH-based libraries use integer
///   handles and fail to load with ``MPIError/symbolMissing(_:library:)``.
/// - Collectives (``allGather(_:)``, ``broadcast(_:from:)``, ``barrier()``) must be called by every
///   rank, in the same order. Calls are serialised by a lock (MPI is initialised with
///   `MPI_THREAD_SERIALIZED`), so any one thread may make them, but two threads of one rank must
///   not interleave collectives whose order matters.
/// - Errors inside MPI follow Open MPI's default handler, `MPI_ERRORS_ARE_FATAL`: the job aborts
///   with Open MPI's message rather than leaving the other ranks waiting. After a thrown Swift
///   error, call ``abort(code:)`` unless every rank is known to stop in step.
/// - Call ``finish()`` once before the process exits: `mpirun` treats a rank that exits without
///   `MPI_Finalize` as failed.
public final class MPIWorld: @unchecked Sendable {
    /// This process's rank, in `0..<size`.
    public let rank: Int
    /// The number of processes in the world (1 without an MPI launcher).
    public let size: Int
    /// The library that was loaded (`"libmpi.so.40"`), or nil for the single-process world.
    public var libraryName: String? { library?.name }
    /// The first line of `MPI_Get_library_version` (e.g. `"Open MPI v4.1.4, …"`), nil for the
    /// single-process world or a library without that call.
    public let libraryVersion: String?
    /// Whether this world runs over MPI (false for the single-process world, which loads nothing).
    public var isDistributed: Bool { library != nil }

    private let library: MPILibrary?
    private let lock = NSLock()
    private var isFinished = false

    /// The most bytes one MPI call moves: counts and displacements are C `int`s.
    static let maxRoundBytes = Int(Int32.max)

    private init(rank: Int, size: Int, library: MPILibrary?) {
        self.rank = rank
        self.size = size
        self.library = library
        libraryVersion = library?.versionString()
    }

    // MARK: Starting

    /// Whether an MPI launcher started this process: Open MPI's `mpirun` sets
    /// `OMPI_COMM_WORLD_SIZE`, and PMIx launchers (Open MPI's, Slurm's `srun --mpi=pmix`) set
    /// `PMIX_RANK`.
    ///
    /// - Parameter environment: the variables to look at (the process's by default).
    public static func launchedUnderMPI(environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        environment["OMPI_COMM_WORLD_SIZE"] != nil || environment["PMIX_RANK"] != nil
    }

    /// The world this process belongs to: over MPI when ``launchedUnderMPI(environment:)`` is true
    /// (see ``connect(libraryNames:)``), otherwise a world of one process that loads no library
    /// (``local()``).
    ///
    /// - Throws: ``MPIError`` when launched under MPI but Open MPI cannot be loaded or started.
    public static func start() throws -> MPIWorld {
        launchedUnderMPI() ? try connect() : local()
    }

    /// A world of one process (rank 0, size 1). Its collectives return their input and it never
    /// loads MPI.
    public static func local() -> MPIWorld {
        MPIWorld(rank: 0, size: 1, library: nil)
    }

    /// The library names ``connect(libraryNames:)`` tries by default, in order.
    public static let defaultLibraryNames = MPILibrary.defaultNames

    private static let connectionLock = NSLock()
    nonisolated(unsafe) private static var connection: MPIWorld?

    /// The world ``connect(libraryNames:)`` started in this process, if any (to finish it at exit).
    public static var current: MPIWorld? {
        connectionLock.lock()
        defer { connectionLock.unlock() }
        return connection
    }

    /// Loads Open MPI and initialises it (`MPI_Init_thread`, `MPI_THREAD_SERIALIZED`) once per
    /// process; later calls return the same world. Without a launcher Open MPI starts a singleton
    /// world of size 1.
    ///
    /// - Parameter libraryNames: the names given to `dlopen`, tried in order.
    /// - Throws: ``MPIError/libraryNotFound(tried:reasons:)`` (the message says what to install),
    ///   ``MPIError/symbolMissing(_:library:)``, ``MPIError/callFailed(_:code:)``, or
    ///   ``MPIError/finished`` after ``finish()``.
    public static func connect(libraryNames: [String] = defaultLibraryNames) throws -> MPIWorld {
        connectionLock.lock()
        defer { connectionLock.unlock() }
        if let world = connection {
            guard !world.finishedState else { throw MPIError.finished }
            return world
        }
        let library = try MPILibrary.load(names: libraryNames)
        var flag: Int32 = 0
        try MPILibrary.check(library.finalized(&flag), "MPI_Finalized")
        guard flag == 0 else { throw MPIError.finished }
        try MPILibrary.check(library.initialized(&flag), "MPI_Initialized")
        if flag == 0 {
            var provided: Int32 = 0
            try MPILibrary.check(library.initThread(nil, nil, MPILibrary.threadSerialized, &provided), "MPI_Init_thread")
        }
        var rank: Int32 = 0
        var size: Int32 = 0
        try MPILibrary.check(library.commRank(library.commWorld, &rank), "MPI_Comm_rank")
        try MPILibrary.check(library.commSize(library.commWorld, &size), "MPI_Comm_size")
        let world = MPIWorld(rank: Int(rank), size: Int(size), library: library)
        connection = world
        return world
    }

    // MARK: Collectives

    /// Gathers every rank's bytes on every rank: element `r` of the result is what rank `r` passed.
    /// Lengths may differ between ranks (and be zero).
    ///
    /// The lengths go first (`MPI_Allgather` of one 64-bit integer each), then the bytes
    /// (`MPI_Allgatherv`), in as many rounds as needed to keep each call under `Int32.max` bytes,
    /// so the total size is limited only by memory.
    public func allGather(_ bytes: [UInt8]) throws -> [[UInt8]] {
        try allGather(bytes, roundLimit: Self.maxRoundBytes)
    }

    /// ``allGather(_:)`` with each round receiving at most `roundLimit` bytes (small limits let
    /// the self-check exercise the multi-round path).
    func allGather(_ bytes: [UInt8], roundLimit: Int) throws -> [[UInt8]] {
        lock.lock()
        defer { lock.unlock() }
        guard !isFinished else { throw MPIError.finished }
        guard let mpi = library else { return [bytes] }

        var myLength = Int64(bytes.count)
        var lengths = [Int64](repeating: 0, count: size)
        try MPILibrary.check(mpi.allgather(&myLength, 1, mpi.int64, &lengths, 1, mpi.int64, mpi.commWorld), "MPI_Allgather")
        let plan = MPIGatherPlan(lengths: lengths.map { Int($0) }, roundLimit: min(roundLimit, Self.maxRoundBytes))
        var gathered = [[UInt8]](repeating: [], count: size)
        var buffer = [UInt8]()
        for round in 0..<plan.rounds {
            let (counts, displacements) = plan.countsAndDisplacements(round: round)
            let total = Int(displacements[size - 1]) + Int(counts[size - 1])
            if buffer.count < total { buffer = [UInt8](repeating: 0, count: total) }
            let mine = plan.range(rank: rank, round: round)
            let code = bytes.withUnsafeBytes { send in
                buffer.withUnsafeMutableBytes { receive in
                    mpi.allgatherv(send.baseAddress.map { $0 + mine.lowerBound }, Int32(mine.count), mpi.byte,
                                   receive.baseAddress, counts, displacements, mpi.byte, mpi.commWorld)
                }
            }
            try MPILibrary.check(code, "MPI_Allgatherv")
            buffer.withUnsafeBytes { received in
                for r in 0..<size {
                    let start = Int(displacements[r])
                    let part = UnsafeRawBufferPointer(rebasing: received[start..<(start + Int(counts[r]))])
                    // The whole message in one round (the usual case) is one copy; rounds append.
                    if gathered[r].isEmpty {
                        gathered[r] = LittleEndianBits.copy(part)
                    } else {
                        gathered[r].append(contentsOf: part)
                    }
                }
            }
        }
        return gathered
    }

    /// Rank `root`'s bytes, on every rank (`MPI_Bcast` of the length, then of the bytes in rounds
    /// under `Int32.max`). Other ranks' `bytes` are ignored; pass `[]`.
    ///
    /// - Throws: ``MPIError/invalidRoot(_:size:)`` for a root outside `0..<size`.
    public func broadcast(_ bytes: [UInt8], from root: Int) throws -> [UInt8] {
        try broadcast(bytes, from: root, roundLimit: Self.maxRoundBytes)
    }

    /// ``broadcast(_:from:)`` in rounds of at most `roundLimit` bytes.
    func broadcast(_ bytes: [UInt8], from root: Int, roundLimit: Int) throws -> [UInt8] {
        lock.lock()
        defer { lock.unlock() }
        guard !isFinished else { throw MPIError.finished }
        guard (0..<size).contains(root) else { throw MPIError.invalidRoot(root, size: size) }
        guard let mpi = library else { return bytes }

        let rootRank = Int32(root)
        var length = Int64(rank == root ? bytes.count : 0)
        try MPILibrary.check(mpi.bcast(&length, 1, mpi.int64, rootRank, mpi.commWorld), "MPI_Bcast")
        var result = rank == root ? bytes : [UInt8](repeating: 0, count: Int(length))
        let step = max(1, min(roundLimit, Self.maxRoundBytes))
        var offset = 0
        while offset < result.count {
            let count = min(step, result.count - offset)
            let code = result.withUnsafeMutableBytes { buffer in
                mpi.bcast(buffer.baseAddress! + offset, Int32(count), mpi.byte, rootRank, mpi.commWorld)
            }
            try MPILibrary.check(code, "MPI_Bcast")
            offset += count
        }
        return result
    }

    /// Waits until every rank has called it (`MPI_Barrier`); returns at once in a world of one.
    public func barrier() throws {
        lock.lock()
        defer { lock.unlock() }
        guard !isFinished else { throw MPIError.finished }
        guard let mpi = library else { return }
        try MPILibrary.check(mpi.barrier(mpi.commWorld), "MPI_Barrier")
    }

    // MARK: Ending

    /// Ends every rank of the job with exit code `code` (`MPI_Abort`): the way out after an error
    /// that other ranks cannot see, which would otherwise leave them waiting in a collective.
    /// In a world of one it exits the process with `code`.
    public func abort(code: Int32) -> Never {
        // Not `lock()`: another thread may be waiting inside a collective while holding it.
        var finished = false
        if lock.try() {
            finished = isFinished
            lock.unlock()
        }
        if let mpi = library, !finished {
            _ = mpi.abort(mpi.commWorld, code)
        }
        exit(code)
    }

    /// Finishes MPI (`MPI_Finalize`); call it once every rank is done, before the process exits.
    /// Later calls do nothing; collectives afterwards throw ``MPIError/finished``, and MPI cannot
    /// be started again in this process.
    public func finish() throws {
        lock.lock()
        defer { lock.unlock() }
        guard !isFinished else { return }
        isFinished = true
        guard let mpi = library else { return }
        var flag: Int32 = 0
        try MPILibrary.check(mpi.finalized(&flag), "MPI_Finalized")
        if flag == 0 {
            try MPILibrary.check(mpi.finalize(), "MPI_Finalize")
        }
    }

    private var finishedState: Bool {
        lock.lock()
        defer { lock.unlock() }
        return isFinished
    }
}
