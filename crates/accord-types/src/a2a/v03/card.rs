//! The 0.3 spelling of a card's security members.
//!
//! 0.3 writes a security scheme as an OpenAPI Security Scheme Object discriminated by `type`
//! (`{"type": "http", "scheme": "bearer"}`, `{"type": "apiKey", "in": "header", "name": …}`), and
//! the card's requirements as `security: [{"<scheme>": [scopes]}]`; 1.0 writes the scheme as a
//! proto oneof (`{"httpAuthSecurityScheme": {…}}`) and the requirements as
//! `securityRequirements`. The conversions below are the 0.3 view of the 1.0 values; what 0.3
//! cannot say (the device code flow, `pkceRequired`) is left out.

use serde_json::{Map, Value, json};

use crate::a2a::card::{OAuthFlows, SecurityRequirement, SecurityScheme};

/// The 0.3 `type` discriminator of a scheme.
pub fn security_scheme_type(scheme: &SecurityScheme) -> &'static str {
    match scheme {
        SecurityScheme::ApiKey(_) => "apiKey",
        SecurityScheme::HttpAuth(_) => "http",
        SecurityScheme::OAuth2(_) => "oauth2",
        SecurityScheme::OpenIdConnect(_) => "openIdConnect",
        SecurityScheme::MutualTls(_) => "mutualTLS",
    }
}

/// A scheme's 0.3 members: `type` and that type's fields (`in`, not 1.0's `location`).
pub fn security_scheme(scheme: &SecurityScheme) -> Map<String, Value> {
    let mut members = Map::new();
    members.insert("type".into(), Value::String(security_scheme_type(scheme).into()));
    let description = match scheme {
        SecurityScheme::ApiKey(api_key) => {
            members.insert("in".into(), Value::String(api_key.location.clone()));
            members.insert("name".into(), Value::String(api_key.name.clone()));
            &api_key.description
        }
        SecurityScheme::HttpAuth(http) => {
            members.insert("scheme".into(), Value::String(http.scheme.clone()));
            if let Some(format) = &http.bearer_format {
                members.insert("bearerFormat".into(), Value::String(format.clone()));
            }
            &http.description
        }
        SecurityScheme::OAuth2(oauth2) => {
            members.insert("flows".into(), Value::Object(flows(&oauth2.flows)));
            if let Some(url) = &oauth2.oauth2_metadata_url {
                members.insert("oauth2MetadataUrl".into(), Value::String(url.clone()));
            }
            &oauth2.description
        }
        SecurityScheme::OpenIdConnect(oidc) => {
            members.insert("openIdConnectUrl".into(), Value::String(oidc.open_id_connect_url.clone()));
            &oidc.description
        }
        SecurityScheme::MutualTls(mtls) => &mtls.description,
    };
    if let Some(description) = description {
        members.insert("description".into(), Value::String(description.clone()));
    }
    members
}

/// 0.3 `OAuthFlows`: an object with one member per flow; the flows 0.3 has keep their 1.0
/// fields but `pkceRequired`, and the device code flow (1.0 only) is left out.
fn flows(flows: &OAuthFlows) -> Map<String, Value> {
    let (name, flow) = match flows {
        OAuthFlows::AuthorizationCode(flow) => ("authorizationCode", serde_json::to_value(flow)),
        OAuthFlows::ClientCredentials(flow) => ("clientCredentials", serde_json::to_value(flow)),
        OAuthFlows::Implicit(flow) => ("implicit", serde_json::to_value(flow)),
        OAuthFlows::Password(flow) => ("password", serde_json::to_value(flow)),
        OAuthFlows::DeviceCode(_) => return Map::new(),
    };
    let mut out = Map::new();
    if let Ok(Value::Object(mut flow)) = flow {
        flow.remove("pkceRequired");
        // 0.3 requires `scopes` on every flow; an empty map is written, not left out.
        flow.entry("scopes").or_insert_with(|| json!({}));
        out.insert(name.into(), Value::Object(flow));
    }
    out
}

/// A requirement in 0.3's `security` shape: `{"<scheme>": [scopes]}`.
pub fn security_requirement(requirement: &SecurityRequirement) -> Value {
    let schemes: Map<String, Value> =
        requirement.schemes.iter().map(|(name, scopes)| (name.clone(), Value::from(scopes.list.clone()))).collect();
    Value::Object(schemes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::card::{
        ApiKeySecurityScheme, HttpAuthSecurityScheme, MutualTlsSecurityScheme, OAuth2SecurityScheme, StringList,
    };

    #[test]
    fn schemes_are_written_with_their_type() {
        let bearer = SecurityScheme::HttpAuth(HttpAuthSecurityScheme {
            description: Some("d".into()),
            scheme: "Bearer".into(),
            bearer_format: Some("JWT".into()),
        });
        assert_eq!(
            Value::Object(security_scheme(&bearer)),
            json!({"type": "http", "scheme": "Bearer", "bearerFormat": "JWT", "description": "d"})
        );
        let key = SecurityScheme::ApiKey(ApiKeySecurityScheme {
            description: None,
            location: "header".into(),
            name: "X-API-Key".into(),
        });
        assert_eq!(
            Value::Object(security_scheme(&key)),
            json!({"type": "apiKey", "in": "header", "name": "X-API-Key"})
        );
        let mtls = SecurityScheme::MutualTls(MutualTlsSecurityScheme::default());
        assert_eq!(Value::Object(security_scheme(&mtls)), json!({"type": "mutualTLS"}));
    }

    #[test]
    fn oauth2_flows_keep_what_0_3_has() {
        let flows: OAuthFlows =
            serde_json::from_value(json!({"clientCredentials": {"tokenUrl": "https://t.example/token"}}))
                .expect("flows");
        let oauth2 =
            SecurityScheme::OAuth2(OAuth2SecurityScheme { description: None, flows, oauth2_metadata_url: None });
        assert_eq!(
            Value::Object(security_scheme(&oauth2)),
            json!({"type": "oauth2", "flows": {"clientCredentials": {"tokenUrl": "https://t.example/token", "scopes": {}}}})
        );
    }

    #[test]
    fn requirements_are_scheme_to_scopes() {
        let mut requirement = SecurityRequirement::default();
        requirement.schemes.insert("oauth".into(), StringList { list: vec!["read".into()] });
        assert_eq!(security_requirement(&requirement), json!({"oauth": ["read"]}));
    }
}
