use idem::{MemoryStore, Status, idempotent};

pub struct Tools {
    store: MemoryStore,
}

impl Tools {
    #[idempotent(key = "email:<customer>:<template>", store = self.store)]
    pub fn send_email(&self, customer: String, template: String, body: String) -> Result<String, idem::Error> {
        Ok(format!("{customer}/{template}: {body}"))
    }

    #[idempotent(key = "sms:<phone:hash>", store = self.store)]
    pub async fn send_sms(&self, phone: String) -> Result<u32, idem::Error> {
        Ok(phone.len() as u32)
    }
}

pub fn main() {
    let tools = Tools { store: MemoryStore::new() };
    tools.send_email("acme".into(), "welcome".into(), "hi".into()).unwrap();
    let status: Result<Status<String>, idem::Error> = tools.send_email_status("acme".into(), "welcome".into());
    assert!(matches!(status, Ok(Status::Completed { .. })), "{status:?}");

    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    rt.block_on(async {
        tools.send_sms("+33 6 00 00 00 00".into()).await.unwrap();
        let status: Result<Status<u32>, idem::Error> = tools.send_sms_status("+33 6 00 00 00 00".into()).await;
        assert!(matches!(status, Ok(Status::Completed { .. })), "{status:?}");
    });
}
