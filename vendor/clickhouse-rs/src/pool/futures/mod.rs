mod get_handle;

pub use self::get_handle::GetHandle;
