import ContinualCore
import ContinualMetrics

extension EnergyEstimate {
    /// The cost on the device of one federated local round: its rows, every gradient step (an
    /// own-loop round's extra ones included, `ExperienceRecord.extraSteps`) and its plugins'
    /// FLOPs. The round's energy, the straggler deadline and FedBuff's device delay all read it.
    init(localRound record: ExperienceRecord, traffic: TrainingTraffic, profile: DeviceProfile) {
        self.init(session: traffic, rows: record.samplesProcessed, steps: record.steps + record.extraSteps,
                  trainableParameters: nil, extraFLOPs: record.extraFLOPs, profile: profile)
    }
}
