/// What kind of device a worker runs on; the device-aware mode balances
/// between the two groups.
///
/// ```
/// use workerpick::{DeviceKind, Pool, WorkerInfo};
/// let pool = Pool::new();
/// pool.insert("gpu").unwrap(); // an accelerator unless told otherwise
/// pool.insert_with("cpu", WorkerInfo::new().device(DeviceKind::Cpu)).unwrap();
/// assert_eq!(pool.info(&"gpu").unwrap().device_kind(), DeviceKind::Accelerator);
/// assert_eq!(pool.info(&"cpu").unwrap().device_kind(), DeviceKind::Cpu);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DeviceKind {
    /// A CPU worker: cheap to run, slow to encode.
    Cpu,
    /// An accelerator (GPU, TPU, …) worker. The default.
    #[default]
    Accelerator,
}

/// Per-worker attributes that selectors may read through
/// [`Context::info`](crate::Context::info).
///
/// ```
/// use workerpick::{DeviceKind, WorkerInfo};
/// let info = WorkerInfo::new().device(DeviceKind::Cpu).group(3);
/// assert_eq!(info.device_kind(), DeviceKind::Cpu);
/// assert_eq!(info.group_id(), 3);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct WorkerInfo {
    device: DeviceKind,
    group: u32,
}

impl WorkerInfo {
    /// An accelerator in group 0.
    pub const fn new() -> Self {
        Self {
            device: DeviceKind::Accelerator,
            group: 0,
        }
    }

    /// Sets the device kind.
    pub const fn device(mut self, device: DeviceKind) -> Self {
        self.device = device;
        self
    }

    /// Sets a caller-defined group (a zone, a rack, a model replica set).
    pub const fn group(mut self, group: u32) -> Self {
        self.group = group;
        self
    }

    /// The device kind.
    pub const fn device_kind(&self) -> DeviceKind {
        self.device
    }

    /// The caller-defined group.
    pub const fn group_id(&self) -> u32 {
        self.group
    }
}
