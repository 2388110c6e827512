import ContinualCore
import Testing
@testable import ContinualOnDevice

/// The configuration fingerprint stored in every on-device checkpoint must not change for a
/// configuration that does not use options added after checkpoints were first written (else an
/// app's stored model is refused after a toolkit update), and must change when they are used.
@Suite struct ConfigurationFingerprintTests {
    @Test func defaultTrainingOptionsDescribeOnlyTheFieldsCheckpointsFirstHad() {
        let text = PersonalModel.Configuration.trainingText(TrainingOptions(epochs: 2, batchSize: 16))
        #expect(text.hasPrefix("TrainingOptions(epochs: 2,"))
        #expect(!text.contains("precision"), "\(text)")
        #expect(text.hasSuffix(")") && text.contains("learningRateSchedule: "), "\(text)")
    }

    @Test func thePatienceRuleIsDescribedAsBeforeTheWindowRuleExisted() {
        let text = PersonalModel.Configuration.trainingText(
            TrainingOptions(epochs: 4, earlyStopping: EarlyStopping(patience: 3, minDelta: 0.01)))
        #expect(text.contains("EarlyStopping(patience: 3, minDelta: 0.01))"), "\(text)")
        #expect(!text.contains("window") && !text.contains("tolerance"), "\(text)")
    }

    @Test func usingANewOptionChangesTheText() {
        var half = TrainingOptions(epochs: 2)
        half.precision = TrainingPrecision(format: .bfloat16)
        let windowed = TrainingOptions(epochs: 2, earlyStopping: EarlyStopping(window: 3, tolerance: 0.01))
        let plain = PersonalModel.Configuration.trainingText(TrainingOptions(epochs: 2))
        #expect(PersonalModel.Configuration.trainingText(half).contains("bfloat16"))
        #expect(PersonalModel.Configuration.trainingText(half) != plain)
        #expect(PersonalModel.Configuration.trainingText(windowed).contains("window: Optional(3)"))
    }
}
